#!/usr/bin/env bash
# Builds the libFuzzer targets (clang++-16, ASan + UBSan) into BUILD_DIR and runs each for
# SECONDS from its seed corpus in fuzz/corpus/<target>/ (new inputs go to a scratch copy, so the
# checked-in seeds stay small). Prints the executions of each target; a crash fails the run and
# leaves the input in BUILD_DIR/fuzz/crashes/<target>/.
#
# SEED is libFuzzer's random seed (default 1; 0: a new one per run, for exploring). A fixed seed
# makes runs start alike, but libFuzzer's comparison tracing feeds run-specific values into its
# mutations, so two runs part after a thousand inputs or so: a failure is replayed from the input
# it leaves (printed in base64 in failures.txt), not from the seed.
#
#   bash fuzz/run.sh [BUILD_DIR] [SECONDS] [SEED]   # CI: 20 s per target, seed 1
#   bash fuzz/run.sh build-fuzz 3600 0              # an hour per target, fresh seeds
#
# GANTRY_UNITY_BUILD=ON|OFF, when set, is passed to CMake (scripts/test.sh sets it; unset, the
# folder keeps its choice).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-fuzz}
seconds=${2:-20}
seed=${3:-1}
jobs=$(nproc 2>/dev/null || echo 2)
# Symbolized frames in the sanitizers' reports (clang-16's symbolizer is not on PATH).
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && [ -x /usr/lib/llvm-16/bin/llvm-symbolizer ]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-16/bin/llvm-symbolizer
fi

# A new folder gets no tests or benchmarks; an existing one keeps its choice (scripts/test.sh builds
# the unit tests in this folder too, for its sanitizer stage, so the libraries are built once).
new_folder=()
[ -f "$dir/CMakeCache.txt" ] || new_folder=(-DGANTRY_BUILD_TESTS=OFF -DGANTRY_BUILD_BENCH=OFF)
[ -z "${GANTRY_UNITY_BUILD:-}" ] || new_folder+=("-DGANTRY_UNITY_BUILD=$GANTRY_UNITY_BUILD")
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-16 \
  -DGANTRY_FUZZ=ON "${new_folder[@]}" >/dev/null
ninja -C "$dir" -j "$jobs" gantry_fuzz

status=0
total=0
# What failed, kept short enough to be read at the end of a CI log: the sanitizer's summary, the
# first frames and the crashing input (base64). scripts/test.sh prints it after its stage table.
failures="$dir/fuzz/failures.txt"
rm -f "$failures"
for bin in "$dir"/fuzz/fuzz_*; do
  target=$(basename "$bin")
  target=${target#fuzz_}
  work="$dir/fuzz/work/$target"
  crashes="$dir/fuzz/crashes/$target"
  rm -rf "$work"
  mkdir -p "$work" "$crashes"
  log="$dir/fuzz/$target.log"
  # -rss_limit_mb and -max_len keep each run inside the machine; -timeout catches hangs.
  if "$bin" "$work" "fuzz/corpus/$target" -max_total_time="$seconds" -seed="$seed" -timeout=10 \
      -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$crashes/" -print_final_stats=1 \
      >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
    tail -n 40 "$log" >&2
    {
      echo "-- $target"
      grep -m 1 -E 'ERROR: |SUMMARY: |ALARM: |out-of-memory|fuzz invariant broken|deadly signal' "$log" || true
      # An exception that escaped the target: libstdc++ names its type and what().
      grep -m 2 -E "terminate called|  what\(\):" "$log" || true
      grep -m 12 -E '^ +#[0-9]+ ' "$log" || true
      for input in "$crashes"/*; do
        [ -f "$input" ] || continue
        echo "input $(basename "$input") ($(wc -c <"$input") bytes), base64 of its first 3 KiB:"
        head -c 3072 "$input" | base64
      done
    } >>"$failures"
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  total=$((total + ${execs:-0}))
  printf '   %-20s %-6s %12s execs in %ss, seed %s\n' "$target" "$result" "${execs:-0}" "$seconds" "$seed"
done
echo "   total: $total execs"
exit "$status"
