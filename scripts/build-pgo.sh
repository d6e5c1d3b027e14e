#!/usr/bin/env bash
# Builds `gantry` and `gantry-bench` with profile-guided optimization (GCC) into BUILD_DIR
# (default: build-pgo): an instrumented build, training runs on generated clusters, then the
# optimized build from the profiles they wrote. The training clusters differ from the cycle
# benchmark's 5,000-node default (other sizes and seeds, the GPU-sharing variant, the
# reclaim-large-jobs shape, the examples), so that benchmark measures code trained elsewhere.
# The runs weigh the full cycle's victim search most: a larger share of GPU-sharing and
# allocate-only runs made the 5,000-node cycle 6% slower in instructions (profiles are relative).
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
train "$dir/gantry-bench" --nodes 2000 --seed 2 --runs 1 --only cycle
train "$dir/gantry-bench" --nodes 3000 --seed 1 --runs 1 --only cycle
train "$dir/gantry-bench" --nodes 300 --variant sharing --runs 1 --only cycle
train "$dir/gantry" bench reclaim-large-jobs --nodes 1000 --runs 1
for example in examples/*.yaml; do
  train "$dir/gantry" cycle "$example"
done
[ -n "$(ls -A "$profile" 2>/dev/null)" ] || { echo "no profiles were written to $profile" >&2; exit 1; }

echo "== optimized build ($dir)"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGANTRY_BUILD_TESTS=OFF \
  -DGANTRY_PGO=use -DGANTRY_PGO_DIR="$profile" >/dev/null
ninja -C "$dir" -j "$jobs" gantry gantry-bench
echo "built $dir/gantry and $dir/gantry-bench"
