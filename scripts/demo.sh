#!/usr/bin/env bash
# Builds Gantry and runs one scheduling cycle on the embedded example cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build gantry >/dev/null
./build/gantry cycle "${1:-examples/small-cluster.yaml}"
