#!/usr/bin/env bash
# Runs an end-to-end test binary against a throwaway control plane (kube-apiserver + etcd built
# from Go modules by tests/e2e/control-plane.sh) started in a temporary folder and always stopped
# at the end, whatever happens. The binary gets KUBECONFIG (admin token) and KUBECONFIG_CERT
# (admin client certificate). Exit code 77 (skipped) when Go is
# not installed, since the control plane cannot be built without it.
#
#   tests/e2e/kube_client/run_with_control_plane.sh TEST_BINARY [ARGS...]
set -euo pipefail

root="$(cd "$(dirname "$0")/../../.." && pwd)"
control_plane="$root/tests/e2e/control-plane.sh"
test_bin="${1:?usage: $0 TEST_BINARY [ARGS...]}"
shift

if ! command -v go >/dev/null 2>&1; then
  echo "SKIPPED: the e2e tests need Go (go on PATH) to build kube-apiserver and etcd"
  exit 77
fi

dir="$(mktemp -d "${TMPDIR:-/tmp}/gantry-e2e.XXXXXX")"
cleanup() {
  local rc=$?
  "$control_plane" stop "$dir/cp" || true
  if [ "$rc" -ne 0 ] && [ -f "$dir/cp/apiserver.log" ]; then
    echo "---- last lines of kube-apiserver's log"
    tail -n 30 "$dir/cp/apiserver.log" || true
  fi
  rm -rf "$dir"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

started=$(date +%s)
"$control_plane" start "$dir/cp" >/dev/null
echo "control plane ready in $(($(date +%s) - started)) s"
# The test has its own time limit so that this script, not CTest, ends it and cleans up.
KUBECONFIG="$dir/cp/kubeconfig" KUBECONFIG_CERT="$dir/cp/kubeconfig-cert" timeout --signal=TERM --kill-after=10 "${GANTRY_E2E_TIMEOUT:-300}" \
  "$test_bin" "$@"
