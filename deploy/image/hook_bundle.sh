#!/bin/sh
# hook_bundle.sh OUT PREFIX BINARY: gdp-cdi-hook's self-contained bundle at
# OUT/PREFIX: BINARY (the gdp-cdi-hook-host target, linked to load itself
# with PREFIX/lib/ld-linux-x86-64.so.2 and DT_RPATH PREFIX/lib) as
# bin/gdp-cdi-hook, and in lib/ every shared library the loader resolves for
# it, the loader itself, and glibc's libpthread, libdl, librt and libm (the
# driver's libnvidia-ml.so.1, dlopen'ed by the hook, is linked against
# them). The Dockerfile puts it in the image at PREFIX; the DaemonSet's
# init container copies it to the same PREFIX on the host (`gdp-cdi-hook
# install`), where the container runtime runs the hook whatever the host's
# own glibc and libraries are. Fails if a library cannot be resolved or the
# binary's loader is not PREFIX's.
set -eu
[ $# -eq 3 ] || { echo "usage: $0 OUT PREFIX BINARY" >&2; exit 2; }
out=$1 prefix=$2 bin=$3
dest=$out$prefix
[ -x "$bin" ] || { echo "$0: $bin is not an executable" >&2; exit 1; }
interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[ "$interp" = "$prefix/lib/ld-linux-x86-64.so.2" ] || {
  echo "$0: $bin loads with '$interp', not $prefix/lib/ld-linux-x86-64.so.2" >&2
  exit 1
}
mkdir -p "$dest/bin" "$dest/lib"
cp -L "$bin" "$dest/bin/gdp-cdi-hook"
chmod 0755 "$dest/bin/gdp-cdi-hook"
ldd "$bin" > "$dest/.ldd" 2>&1 || { echo "$0: ldd $bin failed" >&2; exit 1; }
if grep -q "not found" "$dest/.ldd"; then
  echo "$0: $bin needs libraries that cannot be found:" >&2
  grep "not found" "$dest/.ldd" >&2
  exit 1
fi
libc=
while read -r first second third _; do
  case "$second" in
    "=>")
      # The loader appears as "PREFIX/lib/ld-linux...so.2 => /lib64/...":
      # copied below.
      case "$first" in */*) continue ;; esac
      case "$third" in /*) cp -L "$third" "$dest/lib/$first" ;; esac
      if [ "$first" = libc.so.6 ]; then libc=$third; fi ;;
  esac
done < "$dest/.ldd"
rm -f "$dest/.ldd"
[ -n "$libc" ] || { echo "$0: no libc.so.6 among the libraries" >&2; exit 1; }
cp -L /lib64/ld-linux-x86-64.so.2 "$dest/lib/ld-linux-x86-64.so.2"
for lib in libpthread.so.0 libdl.so.2 librt.so.1 libm.so.6; do
  f="$(dirname "$libc")/$lib"
  [ -e "$f" ] && cp -L "$f" "$dest/lib/$lib"
done
chmod 0755 "$dest/lib/"*
