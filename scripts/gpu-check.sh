#!/usr/bin/env bash
# The check for a real GPU machine (docs/testing.md, "A real GPU").
#
#   scripts/gpu-check.sh pack [--no-build] [DIR]
#     On this Debian machine: builds Release (--no-build: uses what
#     $BUILD_DIR, default build/, holds) and packs into DIR (default
#     build/gpu-check) what the check needs on a bare machine: our binaries,
#     every shared library they load (with Debian's own dynamic loader, so
#     the machine's glibc does not matter), Debian's Python 3.11 with the
#     modules the API server emulator needs, the emulator and its schema,
#     the fake NVML (for a run without a GPU) and the driver script.
#     Under 64 MiB. Prints how to run it.
#
#   DIR/gpu-check.sh run OUT [--fake MACHINE] [--idle-seconds N]
#     On the GPU machine (or here with --fake, against the fake NVML):
#     writes OUT/report.json and OUT/summary.txt (and the logs), in at most
#     5 minutes. Read only: it changes no GPU setting.
set -euo pipefail

usage() {
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

pack() {
  local repo build out no_build=
  repo=$(cd "$(dirname "$0")/.." && pwd)
  build=${BUILD_DIR:-$repo/build}
  if [ "${1:-}" = --no-build ]; then no_build=1; shift; fi
  out=${1:-$build/gpu-check}
  case "$out" in /*) ;; *) out=$PWD/$out ;; esac
  if [ -n "$no_build" ]; then
    echo "== using the binaries in $build"
  else
    echo "== building Release in $build"
  fi
  mkdir -p "$build"
  if [ -z "$no_build" ] && ! { cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
         cmake --build "$build" -j"$(nproc)" --target gpu-device-plugin \
           gdp-cdi-hook dpctl fake-nvml fake_nvml; } >"$build/gpu-check-build.log" 2>&1; then
    cat "$build/gpu-check-build.log" >&2
    exit 1
  fi
  echo "== packing into $out"
  # Replaces an earlier pack only: never a directory of something else.
  if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && [ ! -e "$out/bin/gpu-device-plugin" ]; then
    echo "gpu-check.sh: $out is not empty and holds no earlier pack (no bin/gpu-device-plugin); not removing it: name a new directory" >&2
    exit 2
  fi
  rm -rf "$out"
  mkdir -p "$out"/{bin,lib,fake/machines,kube/schemas,py/site}

  cp "$build/src/gpu-device-plugin" "$build/src/gdp-cdi-hook" "$build/dpctl/dpctl" \
    "$build/fake_nvml/fake-nvml" "$out/bin/"
  cp /usr/bin/python3.11 "$out/bin/python3.11"
  cp -L "$build/fake_nvml/lib/libnvidia-ml.so.1" "$out/fake/"
  cp "$repo"/fake_nvml/machines/*.yaml "$out/fake/machines/"

  # Debian's Python: the standard library less what the check never uses;
  # the modules of python3-jsonschema, -yaml and -cryptography. Run with -S,
  # so the machine's own site directories are never read.
  local std=/usr/lib/python3.11
  mkdir -p "$out/py/lib"
  tar -C /usr/lib --exclude=__pycache__ --exclude=python3.11/test \
    --exclude=python3.11/idlelib --exclude=python3.11/tkinter \
    --exclude=python3.11/turtledemo --exclude=python3.11/ensurepip \
    --exclude=python3.11/lib2to3 --exclude=python3.11/pydoc_data \
    --exclude='python3.11/config-3.11-*' --exclude=python3.11/distutils \
    --exclude='python3.11/lib-dynload/_tkinter*' \
    --exclude='python3.11/lib-dynload/_sqlite3*' \
    --exclude='python3.11/lib-dynload/_curses*' \
    --exclude='python3.11/lib-dynload/_dbm*' \
    --exclude='python3.11/lib-dynload/_gdbm*' \
    --exclude='python3.11/lib-dynload/readline*' \
    -cf - python3.11 | tar -C "$out/py/lib" -xf -
  [ -d "$std" ] || { echo "gpu-check: $std missing" >&2; exit 1; }
  local dist=/usr/lib/python3/dist-packages
  for m in jsonschema attr attrs pyrsistent _pyrsistent_version.py yaml _yaml \
           cryptography _cffi_backend.cpython-311-x86_64-linux-gnu.so; do
    [ -e "$dist/$m" ] || { echo "gpu-check: $dist/$m missing (scripts/deps.sh)" >&2; exit 1; }
    tar -C "$dist" --exclude=__pycache__ -cf - "$m" | tar -C "$out/py/site" -xf -
  done

  # The emulator and the schema it validates slices against.
  cp "$repo"/tests/kube/*.py "$out/kube/"
  rm -f "$out"/kube/*_test.py
  local schema=$repo/../shared/k8s-openapi/resource.k8s.io-v1-release-1.36.json
  [ -f "$schema" ] || { echo "gpu-check: $schema missing" >&2; exit 1; }
  cp "$schema" "$out/kube/schemas/"
  cp "$repo/scripts/gpu_check.py" "$out/check.py"
  cp "$0" "$out/gpu-check.sh"

  # Every shared object any of them loads, and the loader itself.
  local objs
  objs=$( (ls "$out"/bin/* "$out/fake/libnvidia-ml.so.1"; find "$out/py" -name '*.so*') )
  ldd $objs 2>/dev/null | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}' |
    sort -u | while read -r so; do
      cp -L "$so" "$out/lib/$(basename "$so")"
    done
  cp -L /lib64/ld-linux-x86-64.so.2 "$out/lib/ld-linux-x86-64.so.2"
  # OpenSSL's providers (python3-cryptography loads "legacy"), found
  # through OPENSSL_MODULES at run time.
  cp -rL /usr/lib/x86_64-linux-gnu/ossl-modules "$out/lib/ossl-modules"
  local missing
  missing=$(ldd $objs 2>/dev/null | grep 'not found' || true)
  [ -z "$missing" ] || { echo "gpu-check: unresolved libraries: $missing" >&2; exit 1; }
  strip --strip-unneeded "$out"/bin/gpu-device-plugin "$out"/bin/dpctl \
    "$out"/bin/gdp-cdi-hook \
    "$out"/bin/fake-nvml 2>/dev/null || true

  local bytes
  bytes=$(du -sb "$out" | cut -f1)
  if [ "$bytes" -gt $((64 * 1024 * 1024)) ]; then
    echo "gpu-check: the pack is $bytes bytes, over 64 MiB" >&2
    exit 1
  fi
  tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
  echo "== packed: $((bytes / 1024 / 1024)) MiB in $out, $(($(stat -c %s "$out.tar.gz") / 1024 / 1024)) MiB as $out.tar.gz"
  echo "   copy it to the GPU machine, then run there (read only, 5 minutes at most):"
  echo "     <dir>/gpu-check.sh run <out-dir>"
  echo "   here, against the fake NVML:"
  echo "     $out/gpu-check.sh run /tmp/gpu-check-out --fake hgx-h100"
}

run() {
  local pack
  pack=$(cd "$(dirname "$0")" && pwd)
  if [ ! -x "$pack/bin/gpu-device-plugin" ]; then
    # Called from the repository: use the pack in the build tree.
    local built=${BUILD_DIR:-$pack/../build}/gpu-check
    [ -x "$built/gpu-check.sh" ] || {
      echo "gpu-check: no pack at $built; run '$0 pack' first" >&2
      exit 1
    }
    exec "$built/gpu-check.sh" run "$@"
  fi
  [ $# -ge 1 ] || usage
  # Debian's loader and libraries for everything we run; the machine's
  # libnvidia-ml.so.1 is found through its loader cache or driver paths.
  OPENSSL_MODULES=$pack/lib/ossl-modules OPENSSL_CONF=/dev/null \
    PYTHONHOME=$pack/py PYTHONPATH=$pack/py/site:$pack/kube \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    exec "$pack/lib/ld-linux-x86-64.so.2" --library-path "$pack/lib" \
    "$pack/bin/python3.11" -S "$pack/check.py" --pack "$pack" "$@"
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) usage ;;
esac
