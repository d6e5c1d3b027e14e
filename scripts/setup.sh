#!/usr/bin/env bash
# Installs the Debian packages Gantry builds and tests with. Idempotent: does nothing when they
# are all present. Needs root (or sudo) only when something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libgtest-dev libcurl4-openssl-dev libssl-dev zlib1g-dev libsimdjson-dev
  libjemalloc-dev
  valgrind
)
# Tools the tests and checks use, not the build (the Dockerfile's build stage leaves them out).
TEST_PACKAGES=(
  clang-format-16 clang-tidy-16
  clang-16 libclang-rt-16-dev  # the libFuzzer targets (fuzz/)
  chromium                     # headless rendering test of `gantry simulate --out` reports
  prometheus                   # e2e: the usage database of time-based fairshare
  ccache                       # scripts/test.sh: repeated builds (CI on one machine) reuse objects
)

missing=()
for p in "${PACKAGES[@]}" "${TEST_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
