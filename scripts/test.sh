#!/usr/bin/env bash
# Builds Gantry and runs every test: unit, conformance (the shared corpus next to the project,
# when present) and e2e, then the unit tests again under AddressSanitizer + UBSan, and a
# profile-guided release build (scripts/build-pgo.sh) checked to decide as the plain one.
# The perf label (benchmarks) is excluded; run it with `ctest --test-dir build -L perf -V`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)

corpus="$(pwd)/../shared/conformance"
if [ ! -d "$corpus/lists" ]; then
  echo "note: the conformance corpus ($corpus) is absent: conformance lists are skipped"
fi

echo "== release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j "$jobs"
echo "== tests (unit, conformance, e2e)"
ctest --test-dir build -LE perf --output-on-failure -j "$jobs"
if [ -d "$corpus/lists" ]; then
  echo "== conformance counts per list"
  for list in "$corpus"/lists/*.txt; do
    printf '%s: ' "$(basename "$list" .txt)"
    ./build/gantry conformance --list "$list" --report-only | tail -n 1
  done
fi

echo "== sanitizer build (ASan + UBSan), unit tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGANTRY_SANITIZE=ON \
  -DGANTRY_BUILD_BENCH=OFF >/dev/null
ninja -C build-asan -j "$jobs" gantry_unit_tests gantry
if [ -d "$corpus/lists" ]; then
  echo "== gating conformance lists under the sanitizers"
  grep -v '^#' tests/conformance/gating.txt | while read -r list; do
    [ -n "$list" ] && ./build-asan/gantry conformance --list "$corpus/lists/$list.txt"
  done
fi
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -L unit --output-on-failure -j "$jobs"

echo "== profile-guided release build (scripts/build-pgo.sh): the same decisions as the plain one"
bash scripts/build-pgo.sh build-pgo
for args in "--nodes 1000" "--nodes 2000 --seed 3" "--nodes 500 --variant sharing"; do
  # shellcheck disable=SC2086
  plain=$(./build/gantry-bench $args --runs 1 --only cycle | grep -o 'decisions digest [0-9a-f]*')
  # shellcheck disable=SC2086
  pgo=$(./build-pgo/gantry-bench $args --runs 1 --only cycle | grep -o 'decisions digest [0-9a-f]*')
  echo "   $args: $plain / $pgo"
  if [ -z "$plain" ] || [ "$plain" != "$pgo" ]; then
    echo "the profile-guided build decided differently ($args)" >&2
    exit 1
  fi
done
