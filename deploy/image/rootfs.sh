#!/bin/sh
# rootfs.sh OUT BINARY...: a root directory holding BINARY... in /usr/bin,
# every shared library the dynamic loader resolves for them (at the same
# directories as here), the loader itself, and what the NVIDIA container
# toolkit expects of a container: /etc/ld.so.conf* (its ldconfig run),
# /etc/debian_version (so NVML is mounted into /usr/lib/x86_64-linux-gnu,
# a directory this loader searches) and a /tmp. The Dockerfile copies OUT into
# an empty (scratch) image; tests/deploy/image_rootfs_test.sh runs the
# binaries through OUT's own loader. Fails if a library cannot be resolved.
set -eu
libc=
[ $# -ge 2 ] || { echo "usage: $0 OUT BINARY..." >&2; exit 2; }
out=$1
shift
mkdir -p "$out/usr/bin" "$out/etc/ld.so.conf.d"
install -d -m 1777 "$out/tmp"

# Merged /usr (Debian 12): /lib, /lib64, /bin, /sbin are links into /usr.
for l in /lib /lib64 /bin /sbin; do
  if [ -L "$l" ] && [ ! -e "$out$l" ]; then ln -s "$(readlink "$l")" "$out$l"; fi
done

# copy_lib NAME PATH: PATH's content as NAME in PATH's real directory.
copy_lib() {
  dir=$(realpath "$(dirname "$2")")
  mkdir -p "$out$dir"
  cp -L "$2" "$out$dir/$1"
  echo "$dir" >> "$out/.libdirs"
}

for bin in "$@"; do
  [ -x "$bin" ] || { echo "$0: $bin is not an executable" >&2; exit 1; }
  cp -L "$bin" "$out/usr/bin/$(basename "$bin")"
  # ldd lines: "libx.so.1 => /path/libx.so.1 (0x..)", "/lib64/ld-linux...
  # (0x..)" (the loader), "linux-vdso.so.1 (0x..)" (in the kernel).
  ldd "$bin" > "$out/.ldd" || { echo "$0: ldd $bin failed" >&2; exit 1; }
  if grep -q "not found" "$out/.ldd"; then
    echo "$0: $bin needs libraries that cannot be found:" >&2
    grep "not found" "$out/.ldd" >&2
    exit 1
  fi
  while read -r first second third _; do
    case "$second" in
      "=>")
        case "$third" in /*) copy_lib "$first" "$third" ;; esac
        if [ "$first" = libc.so.6 ]; then libc=$third; fi ;;
      *) case "$first" in /*) copy_lib "$(basename "$first")" "$first" ;; esac ;;
    esac
  done < "$out/.ldd"
  rm -f "$out/.ldd"
done

# The driver's libnvidia-ml.so.1, dlopen'ed at run time, was linked against
# glibc's libpthread, libdl, librt and libm, which our binaries (linked with
# glibc 2.36, where libc holds them) may not need: copy them beside libc.
[ -n "${libc:-}" ] || { echo "$0: no libc.so.6 among the libraries" >&2; exit 1; }
for lib in libpthread.so.0 libdl.so.2 librt.so.1 libm.so.6; do
  f="$(dirname "$libc")/$lib"
  [ -e "$f" ] && copy_lib "$lib" "$f"
done

# The loader's configuration: the directories holding the libraries. The
# toolkit's ldconfig reads it and writes /etc/ld.so.cache.
echo "include /etc/ld.so.conf.d/*.conf" > "$out/etc/ld.so.conf"
sort -u "$out/.libdirs" > "$out/etc/ld.so.conf.d/rootfs.conf"
rm -f "$out/.libdirs"
if [ -f /etc/debian_version ]; then
  cp /etc/debian_version "$out/etc/debian_version"
fi
