#!/usr/bin/env bash
# Counts the instructions (Ir) of one session build + one allocate action with callgrind.
#
#   bench/callgrind.sh <path/to/gantry-bench> <nodes> [extra gantry-bench args, e.g. --no-predicates]
#
# Builds nothing. Runs `gantry-bench --only allocate --nodes N --runs 1` under
# `valgrind --tool=callgrind`, collecting only inside gantry_bench_measured_region (the generator,
# the file load and everything else are not counted), and prints the region's total Ir.
#
# Environment:
#   CALLGRIND_OUT  output file (default: a file in a temporary folder, removed unless KEEP=1)
#   TOP            also print the TOP functions by inclusive cost (default 0: none)
#   KEEP=1         keep the callgrind output file (its path is printed)
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 <gantry-bench> <nodes> [extra gantry-bench args]" >&2
  exit 2
fi
bench=$1
nodes=$2
shift 2
[[ -x "$bench" ]] || { echo "$0: $bench is not an executable" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind not found" >&2; exit 2; }
command -v callgrind_annotate >/dev/null || { echo "$0: callgrind_annotate not found" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gantry-callgrind.XXXXXX")
out=${CALLGRIND_OUT:-$tmp/callgrind.out}
cleanup() {
  if [[ "${KEEP:-0}" != 1 ]]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT

# The pattern ends in '*' so a compiler-made clone (.isra/.constprop) would match too.
valgrind --tool=callgrind --toggle-collect='gantry_bench_measured_region*' \
  --callgrind-out-file="$out" --log-file="$tmp/valgrind.log" \
  "$bench" --only allocate --nodes "$nodes" --runs 1 "$@" >"$tmp/bench.out" || {
  echo "$0: valgrind failed; log:" >&2
  cat "$tmp/valgrind.log" "$tmp/bench.out" >&2
  exit 1
}

# The totals line of the callgrind output holds the collected events (Ir only by default).
ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$out")
if [[ -z "$ir" || "$ir" == 0 ]]; then
  echo "$0: no instructions collected: is gantry_bench_measured_region in $bench?" >&2
  exit 1
fi
grep -E '^(nodes=|\{)' "$tmp/bench.out" || true
printf 'nodes=%s callgrind Ir(gantry_bench_measured_region) = %s\n' "$nodes" "$ir"

if [[ "${TOP:-0}" -gt 0 ]]; then
  echo
  echo "Top $TOP functions by inclusive Ir (callers of the region left out):"
  callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null |
    awk '
      /file:function/ { table = 1; next }
      table == 1 && /^-+$/ { table = 2; next }
      table == 2 && NF > 0 { print }' |
    sed -E 's/ \[[^]]*\]$//; s/\?\?\?://' |
    grep -vE '(libc_start|\(below main\)|RunSize\(|  main$|  0x[0-9a-f]+$)' |
    head -n "$TOP" || true
fi
if [[ "${KEEP:-0}" == 1 ]]; then
  echo "callgrind output: $out"
fi
