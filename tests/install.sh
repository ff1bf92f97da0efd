#!/usr/bin/env bash
# `make install-test` (part of `make test`): installs a build into a scratch prefix with
# scripts/install.sh, moves the prefix elsewhere (an installed tree is relocatable), and
# checks what a user of the installed tree relies on: `tdmap --version` and `tdmap topo`,
# `man tdmap` through MANPATH, the three completions, `tdmap cc` and `tdmap gcc` linking
# the installed runtime and `tdmap trace` tracing the result, `tdmap run --sampler inject`
# and `--mai-auto` preloading the installed libraries, and a C program linked with the
# installed libmai. Usage: tests/install.sh BUILD_DIR (default target/debug).
set -euo pipefail

build=${1:-target/debug}
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d /tmp/tdmap-install.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
# Nothing may lead the installed tdmap back to the build tree.
unset TDMAP_RT_LIB TDMAP_RT_SO TDMAP_MAI_SO TDMAP_MPI_SO MANPATH

fail() { echo "install-test: $*" >&2; exit 1; }
check() { echo "install-test: $*"; }

bash "$root/scripts/install.sh" "$build" "$scratch/first" >/dev/null
mv "$scratch/first" "$scratch/moved"
p=$scratch/moved
tdmap=$p/bin/tdmap

"$tdmap" --version | grep -q '^tdmap [0-9]' || fail "tdmap --version"
"$tdmap" topo | grep -q 'Machine' || fail "tdmap topo prints no machine"
check "tdmap --version, tdmap topo"

[ -f "$p/share/man/man1/tdmap.1" ] || fail "no man page tdmap.1"
man -l "$p/share/man/man1/tdmap.1" 2>/dev/null | grep -q 'Sharing-aware' || fail "man -l tdmap.1"
MANPATH=$p/share/man man -P cat tdmap 2>/dev/null | grep -q 'tdmap-map' || fail "MANPATH=$p/share/man man tdmap"
for sub in topo map run trace cc gcc; do
  MANPATH=$p/share/man man -P cat "tdmap-$sub" 2>/dev/null | grep -q "tdmap-$sub" ||
    fail "MANPATH=$p/share/man man tdmap-$sub"
done
MANPATH=$p/share/man man -P cat tdmap-map 2>/dev/null | grep -q -- '--matrix' || fail "man tdmap-map has no --matrix"
check "man tdmap, man tdmap-COMMAND"

bash_comp=$p/share/bash-completion/completions/tdmap
for f in "$bash_comp" "$p/share/zsh/site-functions/_tdmap" \
  "$p/share/fish/vendor_completions.d/tdmap.fish"; do
  [ -s "$f" ] || fail "no completion file $f"
done
bash -c "source '$bash_comp' && complete -p tdmap" | grep -q 'tdmap' || fail "bash completion not registered"
grep -q 'topo' "$p/share/fish/vendor_completions.d/tdmap.fish" || fail "fish completion lacks topo"
check "bash, zsh and fish completions"

cd "$scratch"
cat > sum.c <<'C'
#include <stdio.h>
int a[1000];
int main(void) { long s = 0; for (int i = 0; i < 1000; i++) a[i] = i; for (int i = 0; i < 1000; i++) s += a[i]; printf("%ld\n", s); return 0; }
C
for front in cc gcc; do
  "$tdmap" "$front" -O1 -o "sum-$front" sum.c || fail "installed tdmap $front cannot build"
  "$tdmap" trace -o "sum-$front.trace" -- "./sum-$front" >/dev/null 2>&1 || fail "tdmap trace of a tdmap $front build"
  "$tdmap" trace-check "sum-$front.trace" >/dev/null || fail "trace-check of the tdmap $front build"
done
check "tdmap cc and tdmap gcc link the installed runtime; tdmap trace traces them"

"$tdmap" run --sampler inject --json -- true 2>run.json || fail "tdmap run --sampler inject"
grep -q '"inject"' run.json || fail "tdmap run --sampler inject ran another sampler"
"$tdmap" run --mai-auto -- true 2>mai.txt || fail "tdmap run --mai-auto"
grep -q 'mai-auto: on' mai.txt || fail "tdmap run --mai-auto without libmai"
check "tdmap run finds the installed libtdmap_rt.so and libmai.so"

cat > mai.c <<'C'
#include <mai.h>
#include <stdio.h>
int main(void) { double *v = mai_alloc_1D(1024, sizeof(double)); if (!v) return 1; v[0] = 1; mai_free_array(v); puts("ok"); return 0; }
C
cc -I"$p/include" -o mai mai.c -L"$p/lib" -lmai -Wl,-rpath,"$p/lib" || fail "C program against the installed mai.h and libmai"
./mai | grep -q ok || fail "C program linked with the installed libmai"
check "mai.h and libmai"

rm "$p/lib/libtdmap_rt.a"
if "$tdmap" cc -o never sum.c 2>err.txt; then fail "tdmap cc linked without its runtime"; fi
grep -q "$p/lib/libtdmap_rt.a" err.txt || fail "tdmap cc's error does not name $p/lib/libtdmap_rt.a: $(cat err.txt)"
check "without its runtime, tdmap cc says where it looked"
echo "install-test: ok"
