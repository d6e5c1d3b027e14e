#!/usr/bin/env bash
# Builds Gantry and runs every test, in stages:
#   setup, release build, lint (scripts/lint.sh: clang-format on every C++ file, clang-tidy on
#   those the change touches), e2e tools (the Go test driver and kube-apiserver/etcd, built before
#   CTest so that no test timeout has to cover a cold build), tests (unit, conformance, e2e),
#   conformance counts, fuzz (short runs, when clang-16 is installed), ASan + UBSan build and
#   tests, ThreadSanitizer build and the threaded tests; with GANTRY_TEST_PGO=1 also a
#   profile-guided release build checked to decide as the plain one (off by default: no shipped
#   binary is built with profiles, and its two extra release builds took a third of the run on a
#   slow machine; scripts/build-pgo.sh checks its own decisions whenever it is run).
# Every stage runs even when an earlier one failed (a later stage that needs an earlier one's
# output then fails too, and says so); the end lists each stage's result and the script exits
# non-zero if any failed. The perf label (benchmarks) is excluded; run it with
# `ctest --test-dir build -L perf -V`.
#
# When ccache is installed (scripts/setup.sh installs it) every C++ build goes through it, with
# paths taken relative to this checkout, so that a fresh clone elsewhere reuses earlier results;
# GANTRY_NO_CCACHE=1 turns it off (a cold machine's timing).
#
# Its builds are unity builds (GANTRY_UNITY_BUILD: sources compiled in batches, a third of the
# CPU of one compiler run per file, which is what a cold machine waits for); GANTRY_UNITY=0 builds
# file by file, as the default configuration does. Each changed file is still compiled alone, by
# clang-tidy in the lint stage.
#
# Environment: GANTRY_REQUIRE_CORPUS=1 makes an absent ../shared/conformance a failure instead of
# a note (CI sets it); GANTRY_TEST_PGO=1 adds the profile-guided stage; GANTRY_FUZZ_SECONDS (default 20) is each fuzz target's time and
# GANTRY_FUZZ_SEED (default 1; 0 = a new seed per run) libFuzzer's seed (see fuzz/run.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
corpus="$(pwd)/../shared/conformance"
script_start=$(date +%s)

declare -a stage_names=() stage_results=()

if [ "${GANTRY_UNITY:-1}" = 0 ]; then
  export GANTRY_UNITY_BUILD=OFF
else
  export GANTRY_UNITY_BUILD=ON
fi
# Passed to every CMake configuration below (fuzz/run.sh reads the variable itself).
unity="-DGANTRY_UNITY_BUILD=$GANTRY_UNITY_BUILD"

if [ "${GANTRY_NO_CCACHE:-0}" != 1 ] && command -v ccache >/dev/null; then
  # Read by CMake when it configures a build folder (also fuzz/run.sh's and build-pgo.sh's).
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache
  CCACHE_BASEDIR="$(pwd)"
  export CCACHE_BASEDIR
  echo "C++ builds through ccache ($(ccache --version | head -n 1))"
fi

# run_stage NAME FUNCTION: runs FUNCTION (under set -e in a subshell), records its result.
run_stage() {
  local name="$1" fn="$2" start rc
  start=$(date +%s)
  echo
  echo "== $name"
  (set -e; "$fn")
  rc=$?
  local took=$(($(date +%s) - start))
  if [ "$rc" -eq 0 ]; then
    stage_results+=("passed (${took}s)")
  else
    stage_results+=("FAILED, exit $rc (${took}s)")
    echo "== $name: FAILED (exit $rc)" >&2
  fi
  stage_names+=("$name")
}

# Runs a long step, printing a line every minute while it runs (the step runs in the background
# and is waited for here, so nothing is left running). The lines go to stderr, so that a caller
# silencing the step's own output (`with_progress ... >/dev/null`) still shows them.
with_progress() {
  local what="$1" start cmd rc=0 next=60
  shift
  start=$(date +%s)
  "$@" &
  cmd=$!
  while kill -0 "$cmd" 2>/dev/null; do
    sleep 2
    if [ $(($(date +%s) - start)) -ge "$next" ]; then
      echo "   ... $what: ${next}s" >&2
      next=$((next + 60))
    fi
  done
  wait "$cmd" || rc=$?
  echo "   $what: $(($(date +%s) - start))s" >&2
  return "$rc"
}

stage_setup() { bash scripts/setup.sh; }

stage_corpus() {
  if [ -d "$corpus/lists" ]; then
    echo "conformance corpus: $corpus"
  elif [ "${GANTRY_REQUIRE_CORPUS:-0}" = 1 ]; then
    echo "the conformance corpus ($corpus) is absent and GANTRY_REQUIRE_CORPUS=1" >&2
    return 1
  else
    echo "note: the conformance corpus ($corpus) is absent: conformance lists are skipped"
  fi
}

stage_release_build() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$unity" >/dev/null
  with_progress "release build" ninja -C build -j "$jobs"
}

stage_lint() {
  # compile_commands.json of the release build (CMAKE_EXPORT_COMPILE_COMMANDS is on; for a unity
  # build, lint.sh configures a folder of per-file commands beside it).
  BUILD_DIR=build with_progress "lint" bash scripts/lint.sh
}

stage_e2e_tools() {
  if ! command -v go >/dev/null; then
    echo "go is not installed: the e2e tests are not registered (see tests/CMakeLists.txt)"
    return 0
  fi
  with_progress "Go test driver (tests/e2e/run.sh build)" bash tests/e2e/run.sh build >/dev/null
  with_progress "kube-apiserver and etcd (tests/e2e/control-plane.sh build)" \
    bash tests/e2e/control-plane.sh build >/dev/null
}

stage_tests() {
  [ -x build/gantry ] || { echo "no build/gantry: the release build failed" >&2; return 1; }
  ctest --test-dir build -LE perf --output-on-failure -j "$jobs"
}

stage_conformance_counts() {
  [ -d "$corpus/lists" ] || { echo "corpus absent: nothing to count"; return 0; }
  [ -x build/gantry ] || { echo "no build/gantry: the release build failed" >&2; return 1; }
  for list in "$corpus"/lists/*.txt; do
    printf '%s: ' "$(basename "$list" .txt)"
    ./build/gantry conformance --list "$list" --report-only | tail -n 1
  done
}

stage_fuzz() {
  if ! command -v clang++-16 >/dev/null; then
    echo "note: clang++-16 is not installed (scripts/setup.sh installs it): fuzzing skipped"
    return 0
  fi
  if [ ! -f fuzz/CMakeLists.txt ]; then
    echo "note: no fuzz/ folder"
    return 0
  fi
  bash fuzz/run.sh build-fuzz "${GANTRY_FUZZ_SECONDS:-20}" "${GANTRY_FUZZ_SEED:-1}"
}

stage_asan() {
  local dir
  if command -v clang++-16 >/dev/null && [ -f build-fuzz/CMakeCache.txt ]; then
    # The fuzz stage's folder (clang-16, ASan + UBSan, RelWithDebInfo): the unit tests and the CLI
    # link the libraries the fuzz targets were built from, so they are compiled once.
    dir=build-fuzz
    cmake -S . -B "$dir" -DGANTRY_BUILD_TESTS=ON "$unity" >/dev/null
    if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && [ -x /usr/lib/llvm-16/bin/llvm-symbolizer ]; then
      export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-16/bin/llvm-symbolizer
    fi
  else
    dir=build-asan
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGANTRY_SANITIZE=ON \
      -DGANTRY_BUILD_BENCH=OFF "$unity" >/dev/null
  fi
  echo "sanitizer build: $dir ($(grep '^CMAKE_CXX_COMPILER:' "$dir/CMakeCache.txt" | cut -d= -f2))"
  with_progress "ASan + UBSan build" ninja -C "$dir" -j "$jobs" gantry_unit_tests gantry
  local failed=0
  if [ -d "$corpus/lists" ]; then
    echo "-- gating conformance lists under the sanitizers"
    while read -r list; do
      [ -n "$list" ] || continue
      "./$dir/gantry" conformance --list "$corpus/lists/$list.txt" || failed=1
    done < <(grep -v '^#' tests/conformance/gating.txt)
  fi
  echo "-- unit tests under the sanitizers"
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
  # The GoogleTest executable runs as a few shards (processes), not one process per test as CTest
  # runs it: a process of the sanitized executable takes about half a second of CPU to start,
  # which for 1,700 tests was some 15 minutes of this stage. The unit label's other tests (the
  # CLI and simulator runs, named in lower case; GoogleTest's suites are CamelCase) through CTest.
  # What runs here is checked for memory errors and undefined behaviour; the decisions are checked
  # by the release run above. So the differential tests over generated clusters run their first
  # seed only (parameters named ..._seed1; seeds 2 and up are left out) and the *Coverage suites,
  # which check on larger clusters that an accelerator acts, are left out: the victim search runs
  # about 30 times slower under the sanitizers, and they took most of this stage.
  local filter='-*_seed2:*_seed3:*_seed4:*_seed5:*_seed6:*_seed7:*_seed8:*_seed9:*Coverage.*'
  gtest_shards "$dir/tests/unit/gantry_unit_tests" "$filter" || failed=1
  ctest --test-dir "$dir" -L unit -E '^[A-Z]' --output-on-failure -j "$jobs" || failed=1
  return "$failed"
}

# gtest_shards EXECUTABLE FILTER: runs a GoogleTest executable's tests that FILTER selects
# (--gtest_filter) as 2 x $jobs shards in parallel (GoogleTest's GTEST_TOTAL_SHARDS /
# GTEST_SHARD_INDEX; twice as many shards as cores, since the tests are dealt out in turn, and a
# shard that drew slow tests would otherwise finish long after the others), each shard's output in
# a file beside it; prints each shard's summary, and a failed shard's failures and last lines (a
# crash names the test it was in).
gtest_shards() {
  local exe="$1" filter="$2" i rc=0 log shards=$((2 * jobs))
  local -a pids=()
  for ((i = 0; i < shards; i++)); do
    # (In the executable's folder, as CTest runs it; a shard that hangs is stopped after 45
    # minutes.)
    (cd "$(dirname "$exe")" && GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$i" \
      timeout 2700 "./$(basename "$exe")" --gtest_brief=1 "--gtest_filter=$filter") \
      >"$exe.shard-$i.log" 2>&1 &
    pids+=("$!")
  done
  for ((i = 0; i < shards; i++)); do
    log="$exe.shard-$i.log"
    if wait "${pids[$i]}"; then
      echo "   shard $((i + 1)) of $shards: $(grep -E '^\[  PASSED  \]' "$log" || echo 'passed')"
    else
      rc=1
      echo "   shard $((i + 1)) of $shards FAILED ($log):"
      grep -E '^\[  FAILED  \]' "$log" || true
      tail -n 40 "$log"
    fi
  done
  return "$rc"
}

stage_tsan() {
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGANTRY_TSAN=ON \
    -DGANTRY_BUILD_BENCH=OFF "$unity" >/dev/null
  with_progress "ThreadSanitizer build" ninja -C build-tsan -j "$jobs" gantry_threaded_tests
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./build-tsan/tests/unit/gantry_threaded_tests
}

stage_pgo() {
  [ -x build/gantry-bench ] || { echo "no build/gantry-bench: the release build failed" >&2; return 1; }
  bash scripts/build-pgo.sh build-pgo
  for args in "--nodes 1000" "--nodes 2000 --seed 3" "--nodes 500 --variant sharing"; do
    # shellcheck disable=SC2086
    plain=$(./build/gantry-bench $args --runs 1 --only cycle | grep -o 'decisions digest [0-9a-f]*')
    # shellcheck disable=SC2086
    pgo=$(./build-pgo/gantry-bench $args --runs 1 --only cycle | grep -o 'decisions digest [0-9a-f]*')
    echo "   $args: $plain / $pgo"
    if [ -z "$plain" ] || [ "$plain" != "$pgo" ]; then
      echo "the profile-guided build decided differently ($args)" >&2
      return 1
    fi
  done
}

run_stage "setup (scripts/setup.sh)" stage_setup
run_stage "conformance corpus present" stage_corpus
run_stage "release build" stage_release_build
run_stage "lint (clang-format on all files, clang-tidy on changed ones)" stage_lint
run_stage "e2e tools (Go driver, kube-apiserver, etcd)" stage_e2e_tools
run_stage "tests (unit, conformance, e2e)" stage_tests
run_stage "conformance counts per list" stage_conformance_counts
run_stage "fuzz targets (short runs)" stage_fuzz
run_stage "sanitizer build (ASan + UBSan), unit tests and gating lists" stage_asan
run_stage "ThreadSanitizer build, threaded unit tests" stage_tsan
if [ "${GANTRY_TEST_PGO:-0}" = 1 ]; then
  run_stage "profile-guided release build: the same decisions as the plain one" stage_pgo
fi

echo
echo "== stages ($(($(date +%s) - script_start))s in all)"
status=0
passed=0
failed=0
for i in "${!stage_names[@]}"; do
  printf '   %-70s %s\n' "${stage_names[$i]}" "${stage_results[$i]}"
  case "${stage_results[$i]}" in
    FAILED*) status=1; failed=$((failed + 1)) ;;
    *) passed=$((passed + 1)) ;;
  esac
done
echo "stages: $passed passed, $failed failed"
if [ "${GANTRY_TEST_PGO:-0}" != 1 ]; then
  echo "(not run: the profile-guided build; GANTRY_TEST_PGO=1 adds it)"
fi
# Details a failed stage left for the end of the log (a CI log is often read from its end).
if [ -s build-fuzz/fuzz/failures.txt ]; then
  echo
  echo "== why the fuzz stage failed (build-fuzz/fuzz/failures.txt)"
  cat build-fuzz/fuzz/failures.txt
fi
exit "$status"
