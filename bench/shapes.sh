#!/usr/bin/env bash
# Runs the benchmark family: every cluster shape at every size, one process each (so each peak
# RSS is its own), full five-action cycle, and prints one Markdown table row per run.
#
#   bench/shapes.sh <path/to/gantry-bench> [sizes, default 200,1000,5000] [runs, default 5]
#
# Environment:
#   SHAPES  space-separated shapes (default: all of them but mixed, which is made for the
#           100,000-node runs; see README.md "The shapes")
#   SEED    generator seed (default: the generator's fixed one)
#   TIMEOUT stop a shape and size after this many seconds of wall clock (default: no limit); its
#           row then says so instead of giving figures
#
# Columns: thread-CPU medians in ms of the session build and of each action, the cycle's
# (session build included), the decisions digest and the process's peak RSS. Needs jq.
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 <gantry-bench> [sizes] [runs]" >&2
  exit 2
fi
bench=$1
sizes=${2:-200,1000,5000}
runs=${3:-5}
shapes=${SHAPES:-default sharing kai-layout busy fractional topology hero}
[[ -x "$bench" ]] || { echo "$0: $bench is not an executable" >&2; exit 2; }
command -v jq >/dev/null || { echo "$0: jq not found" >&2; exit 2; }
seed_args=()
if [[ -n "${SEED:-}" ]]; then seed_args=(--seed "$SEED"); fi
limit=()
if [[ -n "${TIMEOUT:-}" ]]; then limit=(timeout "$TIMEOUT"); fi

echo "| shape | nodes | session | allocate | consolidation | reclaim | preempt | stalegangeviction | cycle | digest | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for shape in $shapes; do
  for n in ${sizes//,/ }; do
    status=0
    out=$("${limit[@]}" "$bench" --shape "$shape" --nodes "$n" --runs "$runs" --only cycle \
      "${seed_args[@]}") || status=$?
    if [[ $status == 124 ]]; then
      echo "| $shape | $n | stopped after ${TIMEOUT} s of wall clock |||||||||"
      continue
    fi
    line=$(grep '^{' <<<"$out") || { echo "$0: $shape at $n nodes failed" >&2; exit 1; }
    jq -r '"| \(.shape) | \(.nodes) | \(.session_cpu_ms) | \(.allocate_cpu_ms) | " +
      "\(.consolidation_cpu_ms) | \(.reclaim_cpu_ms) | \(.preempt_cpu_ms) | " +
      "\(.stalegangeviction_cpu_ms) | \(.cycle_cpu_ms) | \(.decisions_digest) | \(.peak_rss_mib) |"' \
      <<<"$line"
  done
done
