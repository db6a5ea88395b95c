#!/bin/sh
# image_rootfs_test.sh ROOTFS_SH PLUGIN DPCTL FAKE_NVML_TOOL FAKE_NVML_LIBDIR
#   MACHINE_YAML
# Builds the container image's root (deploy/image/rootfs.sh, as the
# Dockerfile does) from the built binaries into a temporary directory, then
# runs them through that root's own loader with only its libraries (no
# loader cache), and runs `discover` with only the fake NVML's directory
# added: every object the loader maps must come from the root (or, for
# discover, the fake NVML's directory), proving the image needs nothing else.
set -eu
[ $# -eq 6 ] || { echo "usage: $0 ROOTFS_SH PLUGIN DPCTL FAKE_NVML_TOOL FAKE_NVML_LIBDIR MACHINE_YAML" >&2; exit 2; }
rootfs_sh=$1 plugin=$2 dpctl=$3 fake_tool=$4 fake_libdir=$5 machine=$6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
fail() { echo "FAIL: $*" >&2; exit 1; }

"$rootfs_sh" "$root" "$plugin" "$dpctl" || fail "rootfs.sh failed"

for f in usr/bin/gpu-device-plugin usr/bin/dpctl lib64/ld-linux-x86-64.so.2 \
         etc/ld.so.conf etc/ld.so.conf.d/rootfs.conf etc/debian_version; do
  [ -e "$root/$f" ] || fail "the root lacks /$f"
done
# glibc's companions that the driver's libnvidia-ml.so.1 is linked against.
for lib in libc.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libm.so.6; do
  [ -n "$(find "$root" -name "$lib")" ] || fail "the root lacks $lib"
done
[ "$(stat -c %a "$root/tmp")" = 1777 ] || fail "/tmp is not mode 1777"
# Only the binaries, the loader, libraries and the few /etc files.
extra=$(cd "$root" && find . -type f ! -path './usr/bin/*' ! -name '*.so*' \
        ! -path './etc/*' | sort)
[ -z "$extra" ] || fail "unexpected files in the root: $extra"

loader=$root/lib64/ld-linux-x86-64.so.2
libpath=$(sed "s|^|$root|" "$root/etc/ld.so.conf.d/rootfs.conf" | paste -sd:)

# run DIRS LOG ARGS...: ARGS through the root's loader, searching only DIRS,
# with an empty environment (plus FAKE_NVML_MACHINE); LD_DEBUG=libs goes
# to LOG so that every loaded object can be checked.
run() {
  dirs=$1 log=$2
  shift 2
  env -i FAKE_NVML_MACHINE="$machine" LD_DEBUG=libs LD_DEBUG_OUTPUT="$log" \
    "$loader" --inhibit-cache --library-path "$dirs" "$@"
}

# only_from LOG DIR...: every object the loader initialised lies under a DIR.
only_from() {
  log=$1
  shift
  inits=$(cat "$log".* | sed -n 's/.*calling init: //p' | sort -u)
  [ -n "$inits" ] || fail "no loader trace in $log"
  for obj in $inits; do
    ok=no
    for d in "$@"; do
      case "$obj" in "$d"/*) ok=yes ;; esac
    done
    [ $ok = yes ] || fail "$obj was loaded from outside the image root"
  done
  echo "$(echo "$inits" | wc -l) object(s), all from the image"
}

out=$(run "$libpath" "$tmp/version" "$root/usr/bin/gpu-device-plugin" --version) ||
  fail "gpu-device-plugin --version failed in the root: $out"
echo "gpu-device-plugin --version: $out"
only_from "$tmp/version" "$root"

out=$(run "$libpath" "$tmp/dpctl" "$root/usr/bin/dpctl" --version) ||
  fail "dpctl --version failed in the root: $out"
echo "dpctl --version: $out"
only_from "$tmp/dpctl" "$root"

# discover through the fake NVML (dlopen'ed as libnvidia-ml.so.1, as the
# toolkit's would be), with a fake sysfs for the NUMA nodes.
"$fake_tool" rootfs --machine "$machine" --out "$tmp/node" > /dev/null ||
  fail "fake-nvml rootfs failed"
run "$libpath:$fake_libdir" "$tmp/discover" \
  "$root/usr/bin/gpu-device-plugin" --sysfs-root "$tmp/node/sys" discover \
  > "$tmp/discover.json" || fail "discover failed in the root"
only_from "$tmp/discover" "$root" "$fake_libdir"
grep -q '"nvml_library"' "$tmp/discover.json" || fail "discover printed no JSON"
gpus=$(grep -c '"uuid": "GPU-' "$tmp/discover.json" || true)
[ "$gpus" -ge 1 ] || fail "discover found no GPU: $(cat "$tmp/discover.json")"
echo "discover through the fake NVML: $gpus GPU(s)"
echo "PASS"
