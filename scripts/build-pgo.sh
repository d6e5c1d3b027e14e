#!/usr/bin/env bash
# Builds `gantry` and `gantry-bench` with profile-guided optimization (GCC) into BUILD_DIR
# (default: build-pgo): an instrumented build, training runs on generated clusters, then the
# optimized build from the profiles they wrote. The training clusters differ from the cycle
# benchmark's 5,000-node default (other sizes and seeds, the GPU-sharing variant, the
# reclaim-large-jobs shape, the examples), so that benchmark measures code trained elsewhere.
# The runs weigh the full cycle's victim search most: a larger share of GPU-sharing and
# allocate-only runs made the 5,000-node cycle 6% slower in instructions (profiles are relative).
# At the end it checks that the optimized binaries decide as the instrumented ones did on the
# training clusters (the same decisions digests): the profiles may change speed, never decisions.
#
#   bash scripts/build-pgo.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-pgo}
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p "$dir"
profile="$(cd "$dir" && pwd)/pgo-profile"
rm -rf "$profile"

echo "== instrumented build ($dir)"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGANTRY_BUILD_TESTS=OFF \
  -DGANTRY_PGO=generate -DGANTRY_PGO_DIR="$profile" >/dev/null
ninja -C "$dir" -j "$jobs" gantry gantry-bench

echo "== training runs"
train() {
  echo "   $*"
  "$@" >/dev/null
}
# The benchmark clusters of the training, whose decisions digests are compared at the end.
checked_runs=("--nodes 2000 --seed 2" "--nodes 3000 --seed 1" "--nodes 300 --variant sharing")
digest() { # BENCH ARGS: the decisions digest of one cycle
  # shellcheck disable=SC2086
  "$1" $2 --runs 1 --only cycle | grep -o 'decisions digest [0-9a-f]*' || true
}
declare -a trained=()
for args in "${checked_runs[@]}"; do
  echo "   gantry-bench $args"
  trained+=("$(digest "$dir/gantry-bench" "$args")")
done
train "$dir/gantry" bench reclaim-large-jobs --nodes 1000 --runs 1
for example in examples/*.yaml; do
  train "$dir/gantry" cycle "$example"
done
[ -n "$(ls -A "$profile" 2>/dev/null)" ] || { echo "no profiles were written to $profile" >&2; exit 1; }

echo "== optimized build ($dir)"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGANTRY_BUILD_TESTS=OFF \
  -DGANTRY_PGO=use -DGANTRY_PGO_DIR="$profile" >/dev/null
ninja -C "$dir" -j "$jobs" gantry gantry-bench

echo "== the optimized build decides as the instrumented one"
for i in "${!checked_runs[@]}"; do
  args=${checked_runs[$i]}
  optimized=$(digest "$dir/gantry-bench" "$args")
  echo "   $args: ${trained[$i]} / $optimized"
  if [ -z "$optimized" ] || [ "${trained[$i]}" != "$optimized" ]; then
    echo "the profile-guided build decided differently ($args)" >&2
    exit 1
  fi
done
echo "built $dir/gantry and $dir/gantry-bench"
