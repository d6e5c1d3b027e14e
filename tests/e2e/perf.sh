#!/usr/bin/env bash
# Throughput of the live mode (TestLiveThroughput): a control plane of its own in DIR (no default
# nodes), `gantry scheduler` and `gantry binder` as their own users, NODES fake nodes x 8 GPUs and
# PODS one-GPU pods (PodGroups of 1) submitted at once. Prints the time until all are bound, pods/s
# and the CPU seconds of scheduler + binder vs kube-apiserver + etcd; stops everything it started.
#
#   GANTRY_BIN=build/gantry tests/e2e/perf.sh DIR [NODES [PODS]]    # default 1250 10000 (all fit)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: perf.sh DIR [NODES [PODS]]}"
: "${GANTRY_BIN:?set GANTRY_BIN to the gantry binary}"
GANTRY_BIN="$(cd "$(dirname "$GANTRY_BIN")" && pwd)/$(basename "$GANTRY_BIN")"
export GANTRY_BIN
export GANTRY_E2E_PERF_NODES="${2:-1250}" GANTRY_E2E_PERF_PODS="${3:-10000}"
# The scheduler runs with its default period, as deployed.
export GANTRY_E2E_SCHEDULER_PERIOD="${GANTRY_E2E_SCHEDULER_PERIOD:-1s}"

trap 'bash "$here/run.sh" down "$dir"' EXIT
GANTRY_E2E_NODES=0 bash "$here/run.sh" up "$dir"
bash "$here/run.sh" test "$dir" -test.v -test.timeout 70m -test.run "${GANTRY_E2E_RUN:-^TestLiveThroughput\$}"
