#!/usr/bin/env bash
# End-to-end harness: a real kube-apiserver (control-plane.sh) prepared with Gantry's deploy/
# manifests, component users, fake GPU nodes and a fake kubelet, and the Go test suite in
# driver/suite run against it. Usage:
#
#   tests/e2e/run.sh build               # build the Go tools (cached by their sources); prints the folder
#   tests/e2e/run.sh up DIR              # control plane in DIR + setup + fake kubelet
#                                       # (GANTRY_E2E_NODES=N fake GPU nodes, default 2;
#                                       # GANTRY_E2E_DEPLOY=0: CRDs only, Gantry not installed)
#   tests/e2e/run.sh test DIR [ARGS...]  # run the suite against DIR (ARGS go to the test binary,
#                                       # e.g. -test.run 'TestRBAC' -test.v)
#   tests/e2e/run.sh down DIR            # stop the fake kubelet and the control plane
#   tests/e2e/run.sh all [ARGS...]       # up in a temporary folder, test, down
#
# After `up`, DIR holds kubeconfig (admin), kubeconfig-gantry-scheduler, kubeconfig-gantry-binder,
# kubeconfig-gantry-podgrouper, kubeconfig-gantry-podgroup-controller,
# kubeconfig-gantry-queue-controller,
# env, tokens.csv and the logs (apiserver.log, etcd.log, kubelet.log).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache_root="${GANTRY_E2E_CACHE:-$HOME/.cache/gantry-e2e}"
export GANTRY_REPO_ROOT="$root"

build() {
  local key out
  key="$( (cd "$here/driver" && find . -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) \
    | LC_ALL=C sort | xargs sha256sum; go version) | sha256sum | cut -c1-16)"
  out="$cache_root/driver-$key"
  if [ -x "$out/gantry-e2e" ] && [ -x "$out/e2e.test" ]; then
    echo "$out"
    return
  fi
  mkdir -p "$out.tmp"
  # (A command substitution does not inherit set -e: a failed build must return by itself.)
  (cd "$here/driver" && go build -ldflags "-s -w" -o "$out.tmp/gantry-e2e" ./cmd/gantry-e2e &&
    go test -c -ldflags "-s -w" -o "$out.tmp/e2e.test" ./suite) >&2 || { rm -rf "$out.tmp"; return 1; }
  rm -rf "$out"
  mv "$out.tmp" "$out"
  # Builds of other sources are left to other checkouts for a day, then removed.
  find "$cache_root" -maxdepth 1 -name 'driver-*' ! -name "driver-$key" -mmin +1440 \
    -exec rm -rf {} + 2>/dev/null || true
  echo "$out"
}

up() {
  local dir="$1" bins
  [ -f "$dir/env" ] && down "$dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  bins="$(build)"
  bash "$here/control-plane.sh" start "$dir" >/dev/null
  if ! "$bins/gantry-e2e" setup "$dir" --nodes "${GANTRY_E2E_NODES:-2}" \
    --deploy="$([ "${GANTRY_E2E_DEPLOY:-1}" = 0 ] && echo false || echo true)"; then
    down "$dir"
    return 1
  fi
  # The fake kubelet runs until `down`; its output goes to a file so nothing waits on it.
  nohup "$bins/gantry-e2e" kubelet "$dir" >"$dir/kubelet.log" 2>&1 </dev/null &
  echo $! >"$dir/kubelet.pid"
  local synced=""
  for _ in $(seq 1 150); do
    if grep -q "fake kubelet synced" "$dir/kubelet.log"; then
      synced=1
      break
    fi
    kill -0 "$(cat "$dir/kubelet.pid")" 2>/dev/null || break
    sleep 0.2
  done
  if [ -z "$synced" ]; then
    echo "e2e: the fake kubelet did not start; see $dir/kubelet.log" >&2
    down "$dir"
    return 1
  fi
  echo "e2e: control plane ready in $dir (admin: $dir/kubeconfig)"
}

down() {
  local dir="$1"
  if [ -f "$dir/kubelet.pid" ]; then
    local pid
    pid="$(cat "$dir/kubelet.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/kubelet.pid"
  fi
  bash "$here/control-plane.sh" stop "$dir"
}

run_tests() {
  local dir="$1" bins
  shift
  dir="$(cd "$dir" && pwd)"
  bins="$(build)"
  # The tests read the repository's deploy/ and examples/; GANTRY_BIN (the gantry binary) is
  # optional and enables the check that the shipped scheduler configuration loads.
  (cd "$root" && GANTRY_E2E_DIR="$dir" "$bins/e2e.test" -test.timeout 10m "$@")
}

case "${1:-}" in
  build) build ;;
  up) up "${2:?up needs a folder}" ;;
  down) down "${2:?down needs a folder}" ;;
  test)
    dir="${2:?test needs a folder}"
    shift 2
    run_tests "$dir" "$@"
    ;;
  all)
    shift
    dir="$(mktemp -d)"
    trap 'down "$dir"; rm -rf "$dir"' EXIT
    up "$dir"
    run_tests "$dir" -test.v "$@"
    ;;
  *)
    echo "usage: $0 build | up DIR | test DIR [ARGS...] | down DIR | all [ARGS...]" >&2
    exit 2
    ;;
esac
