#!/usr/bin/env bash
# Installs the Debian 12 packages the build, tests and demo need (only those
# missing). Runs apt-get through sudo when not root. With --build, only what
# building needs (the Dockerfile's builder).
set -euo pipefail
build=(
  cmake ninja-build g++ pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libyaml-cpp-dev libcli11-dev libspdlog-dev nlohmann-json3-dev
  libcpp-httplib-dev libssl-dev libgtest-dev libgmock-dev libbenchmark-dev
)
# The clang + sanitizer build; the deploy tests (tests/deploy) render the
# manifests with kubectl and check them with python3-kubernetes; the metrics
# test parses /metrics with python3-prometheus-client; the Kubernetes API
# server emulator (tests/kube) makes its CA with python3-cryptography and,
# like the deploy tests, checks objects against the Kubernetes OpenAPI
# schema with python3-jsonschema; the demo uses curl; the runtime tests
# (tests/runtime) and the demo's last step build and run containers with
# podman and runc, on a base image made with debootstrap.
packages=("${build[@]}" clang libclang-rt-14-dev python3-kubernetes
          python3-yaml python3-prometheus-client python3-cryptography
          python3-jsonschema curl podman runc debootstrap)
# Debian's kubectl conflicts with Google's kubectl package: only when none.
command -v kubectl > /dev/null || packages+=(kubernetes-client)
[ "${1:-}" = "--build" ] && packages=("${build[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "Installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
