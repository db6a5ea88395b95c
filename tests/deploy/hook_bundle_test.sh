#!/bin/sh
# hook_bundle_test.sh HOOK_BUNDLE_SH HOOK_HOST_BINARY PREFIX
# Builds gdp-cdi-hook's host bundle (deploy/image/hook_bundle.sh, as the
# Dockerfile does) into a temporary directory, checks that the binary loads
# with the bundle's own loader and DT_RPATH at PREFIX, runs it through that
# loader with only the bundle's libraries (no loader cache, an empty
# environment): every object mapped must come from the bundle; then runs
# its `install` (what the DaemonSet's init container does) into another
# directory and checks the copy is the bundle, file for file and mode.
set -eu
[ $# -eq 3 ] || { echo "usage: $0 HOOK_BUNDLE_SH HOOK_HOST_BINARY PREFIX" >&2; exit 2; }
bundle_sh=$1 bin=$2 prefix=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bundle_sh" "$tmp/out" "$prefix" "$bin" || fail "hook_bundle.sh failed"
b=$tmp/out$prefix
for f in bin/gdp-cdi-hook lib/ld-linux-x86-64.so.2 lib/libc.so.6 \
         lib/libpthread.so.0 lib/libdl.so.2 lib/librt.so.1 lib/libm.so.6 \
         lib/libstdc++.so.6; do
  [ -e "$b/$f" ] || fail "the bundle lacks $f"
done
readelf -d "$b/bin/gdp-cdi-hook" | grep -q "(RPATH).*\[$prefix/lib\]" ||
  fail "bin/gdp-cdi-hook has no DT_RPATH $prefix/lib"
extra=$(cd "$b" && find . -type f ! -path ./bin/gdp-cdi-hook ! -path './lib/*' | sort)
[ -z "$extra" ] || fail "unexpected files in the bundle: $extra"

# The bundle's loader, only its libraries, an empty environment.
env -i LD_DEBUG=libs LD_DEBUG_OUTPUT="$tmp/ld" \
  "$b/lib/ld-linux-x86-64.so.2" --inhibit-cache --library-path "$b/lib" \
  "$b/bin/gdp-cdi-hook" install "$tmp/host$prefix" ||
  fail "gdp-cdi-hook install failed"
inits=$(cat "$tmp"/ld.* | sed -n 's/.*calling init: //p' | sort -u)
[ -n "$inits" ] || fail "no loader trace"
for obj in $inits; do
  case "$obj" in "$b"/lib/*) ;; *) fail "$obj was loaded from outside the bundle" ;; esac
done
echo "$(echo "$inits" | wc -l) object(s), all from the bundle"

# install copied the bundle, file for file, keeping modes.
(cd "$b" && find . -type f | sort) > "$tmp/want"
(cd "$tmp/host$prefix" && find . -type f ! -name '.*' | sort) > "$tmp/got"
cmp -s "$tmp/want" "$tmp/got" || fail "install copied $(cat "$tmp/got") instead of $(cat "$tmp/want")"
while read -r f; do
  cmp -s "$b/$f" "$tmp/host$prefix/$f" || fail "install changed $f"
  [ "$(stat -c %a "$b/$f")" = "$(stat -c %a "$tmp/host$prefix/$f")" ] ||
    fail "install changed the mode of $f"
done < "$tmp/want"
# Installing again over a copy (a DaemonSet pod restarted) works.
env -i "$b/lib/ld-linux-x86-64.so.2" --inhibit-cache --library-path "$b/lib" \
  "$b/bin/gdp-cdi-hook" install "$tmp/host$prefix" || fail "a second install failed"

# The hook's usage errors exit 2 with one line.
set +e
said=$(env -i "$b/lib/ld-linux-x86-64.so.2" --inhibit-cache \
  --library-path "$b/lib" "$b/bin/gdp-cdi-hook" frobnicate 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] || fail "an unknown subcommand exited $rc, not 2"
case "$said" in "gdp-cdi-hook: expected the subcommand"*) ;; *) fail "said: $said" ;; esac
echo "PASS"
