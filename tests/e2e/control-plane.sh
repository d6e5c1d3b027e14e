#!/usr/bin/env bash
# A throwaway Kubernetes control plane on loopback for end-to-end tests: etcd and kube-apiserver
# built from Go modules (tests/e2e/k8sbins), free ports, a generated service-account key, and a
# static admin token. Usage:
#
#   tests/e2e/control-plane.sh build        # build (or reuse) the binaries; prints their folder
#   tests/e2e/control-plane.sh start DIR    # start in DIR; writes DIR/kubeconfig (admin token),
#                                          # DIR/kubeconfig-cert (admin client certificate) and DIR/env
#   tests/e2e/control-plane.sh stop DIR     # stop what `start DIR` started
#
# DIR/env holds KUBE_SERVER, KUBE_TOKEN, KUBECONFIG and the two process ids.
#
# Besides admin (system:masters), the token file has one user per Gantry component,
# gantry-scheduler, gantry-binder, gantry-podgrouper, gantry-podgroup-controller and
# gantry-queue-controller, with no group and so no permission until something binds
# them (tests/e2e binds them to the deploy/rbac roles). Each user gets DIR/kubeconfig-USER.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache_root="${GANTRY_E2E_CACHE:-$HOME/.cache/gantry-e2e}"
users="gantry-scheduler gantry-binder gantry-podgrouper gantry-podgroup-controller gantry-queue-controller"

bin_dir() {
  local key
  key="$(sha256sum "$here/k8sbins/go.sum" | cut -c1-16)"
  echo "$cache_root/$key/bin"
}

build() {
  local out
  out="$(bin_dir)"
  if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ] && [ -x "$out/kube-controller-manager" ]; then
    echo "$out"
    return
  fi
  mkdir -p "$out"
  # Without DWARF and symbol tables (-s -w): the binaries are only run, never debugged, and
  # leaving them out shortens the links of these large binaries.
  (cd "$here/k8sbins" && go build -ldflags "-s -w" -o "$out/" ./cmd/...) >&2
  echo "$out"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# kubeconfig DIR PORT USER TOKEN: a kubeconfig verifying the API server's self-signed certificate.
kubeconfig() {
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$2
    certificate-authority: $1/certs/apiserver.crt
contexts:
- name: e2e
  context: {cluster: e2e, user: $3}
current-context: e2e
users:
- name: $3
  user: {token: $4}
EOF
}

start() {
  local dir="$1" bins
  bins="$(build)"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  local etcd_client etcd_peer api token
  etcd_client="$(free_port)"
  etcd_peer="$(free_port)"
  api="$(free_port)"
  token="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
  openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
  echo "$token,admin,admin,\"system:masters\"" >"$dir/tokens.csv"
  local user
  for user in $users; do
    echo "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'),$user,$user" >>"$dir/tokens.csv"
  done
  # A client CA and an admin client certificate signed by it.
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=e2e-client-ca" \
    -keyout "$dir/client-ca.key" -out "$dir/client-ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=cert-admin" \
    -keyout "$dir/admin.key" -out "$dir/admin.csr" 2>/dev/null
  openssl x509 -req -in "$dir/admin.csr" -CA "$dir/client-ca.crt" -CAkey "$dir/client-ca.key" \
    -CAcreateserial -days 2 -out "$dir/admin.crt" 2>/dev/null

  "$bins/etcd" --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_client" \
    --advertise-client-urls "http://127.0.0.1:$etcd_client" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
    --unsafe-no-fsync >"$dir/etcd.log" 2>&1 &
  local etcd_pid=$!
  "$bins/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_client" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api" \
    --cert-dir "$dir/certs" --service-cluster-ip-range 10.0.0.0/24 \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$dir/sa.pub" --service-account-signing-key-file "$dir/sa.key" \
    --token-auth-file "$dir/tokens.csv" --client-ca-file "$dir/client-ca.crt" \
    --authorization-mode RBAC \
    --disable-admission-plugins ServiceAccount \
    --feature-gates DRAExtendedResource=true >"$dir/apiserver.log" 2>&1 &
  local api_pid=$!

  local ready=""
  for _ in $(seq 1 120); do
    if [ "$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
      "https://127.0.0.1:$api/readyz")" = "200" ]; then
      ready=1
      break
    fi
    sleep 0.5
  done
  cat >"$dir/env" <<EOF
KUBE_SERVER=https://127.0.0.1:$api
KUBE_TOKEN=$token
KUBECONFIG=$dir/kubeconfig
ETCD_PID=$etcd_pid
APISERVER_PID=$api_pid
EOF
  kubeconfig "$dir" "$api" admin "$token" >"$dir/kubeconfig"
  for user in $users; do
    kubeconfig "$dir" "$api" "$user" "$(grep ",$user,$user\$" "$dir/tokens.csv" | cut -d, -f1)" \
      >"$dir/kubeconfig-$user"
  done
  # Relative certificate paths (resolved against the kubeconfig's folder) and an inline CA.
  cat >"$dir/kubeconfig-cert" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$api
    certificate-authority-data: $(base64 -w0 "$dir/certs/apiserver.crt" 2>/dev/null)
contexts:
- name: e2e
  context: {cluster: e2e, user: cert-admin}
current-context: e2e
users:
- name: cert-admin
  user: {client-certificate: admin.crt, client-key: admin.key}
EOF
  if [ -z "$ready" ]; then
    echo "control-plane: kube-apiserver did not become ready; see $dir/apiserver.log" >&2
    stop "$dir"
    exit 1
  fi
  # GANTRY_E2E_CONTROLLERS=1: kube-controller-manager with the workload controllers and the
  # garbage collector, so that Jobs, Deployments and StatefulSets create (and owners' deletion
  # removes) their pods and PodGroups as in a real cluster. No other controller runs (no
  # service accounts, no node lifecycle: the fake nodes stay as the tests make them).
  if [ "${GANTRY_E2E_CONTROLLERS:-0}" = "1" ]; then
    "$bins/kube-controller-manager" --kubeconfig "$dir/kubeconfig" \
      --authentication-kubeconfig "$dir/kubeconfig" --authorization-kubeconfig "$dir/kubeconfig" \
      --bind-address 127.0.0.1 --secure-port "$(free_port)" --cert-dir "$dir/kcm-certs" \
      --leader-elect=false \
      --controllers job-controller,cronjob-controller,replicaset-controller,deployment-controller,statefulset-controller,garbage-collector-controller \
      >"$dir/controller-manager.log" 2>&1 &
    echo "KCM_PID=$!" >>"$dir/env"
  fi
  echo "$dir/env"
}

# True while the process runs (a zombie waiting to be reaped by init counts as gone).
alive() {
  local state
  state="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
  [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}

# SIGTERM, up to 10 s to exit, then SIGKILL.
stop_pid() {
  local pid="$1"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 40); do
    alive "$pid" || return 0
    sleep 0.25
  done
  kill -9 "$pid" 2>/dev/null || true
}

stop() {
  local dir="$1"
  [ -f "$dir/env" ] || return 0
  # shellcheck disable=SC1091
  . "$dir/env"
  # The controller manager (when one runs), then the API server: without etcd its graceful
  # shutdown hangs until killed.
  if [ -n "${KCM_PID:-}" ]; then stop_pid "$KCM_PID"; fi
  stop_pid "$APISERVER_PID"
  stop_pid "$ETCD_PID"
}

case "${1:-}" in
  build) build ;;
  start) start "${2:?start needs a folder}" ;;
  stop) stop "${2:?stop needs a folder}" ;;
  *)
    echo "usage: $0 build | start DIR | stop DIR" >&2
    exit 2
    ;;
esac
