#!/usr/bin/env bash
# Builds Gantry and simulates a day of three teams sharing a GPU cluster (examples/sim/teams-day.yaml):
# prints per-team waits and evictions and writes the report to sim-report/report.html.
# `scripts/demo.sh FILE [DIR]` simulates another file; `gantry cycle` runs one cycle of a scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build gantry >/dev/null
./build/gantry simulate "${1:-examples/sim/teams-day.yaml}" --out "${2:-sim-report}"
