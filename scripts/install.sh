#!/usr/bin/env bash
# Installs a cargo build of tdmap under a prefix: scripts/install.sh BUILD_DIR PREFIX
# (`make install PREFIX=...` builds, then calls this). The tree is relocatable: the
# installed tdmap finds its libraries in ../lib relative to itself (src/cmd/cc.rs).
#   PREFIX/bin/tdmap
#   PREFIX/lib/libtdmap_rt.{a,so}    the runtime: `tdmap cc`/`tdmap gcc` link the archive,
#                                    `tdmap run --sampler inject` preloads the .so
#   PREFIX/lib/libmai.{a,so}         Minas's MAi policies (`tdmap run --mai-auto`, -lmai)
#   PREFIX/lib/libtdmap_mpi_*.so     `tdmap comm`, one per MPI found at build time
#   PREFIX/include/mai.h, mai.f90    libmai's C and Fortran interfaces
#   PREFIX/share/man/man1/           tdmap.1 and tdmap-COMMAND.1
#   PREFIX/share/{bash-completion/completions,zsh/site-functions,fish/vendor_completions.d}
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: scripts/install.sh BUILD_DIR PREFIX" >&2
  exit 2
fi
build=$1
prefix=$2
root=$(cd "$(dirname "$0")/.." && pwd)

for f in tdmap libtdmap_rt.a libtdmap_rt.so libmai.a libmai.so; do
  if [ ! -f "$build/$f" ]; then
    echo "install: $build/$f is missing; run \`make install\`, which builds it" >&2
    exit 2
  fi
done

install -d "$prefix/bin" "$prefix/lib" "$prefix/include" "$prefix/share/man/man1" \
  "$prefix/share/bash-completion/completions" "$prefix/share/zsh/site-functions" \
  "$prefix/share/fish/vendor_completions.d"
install -m 755 "$build/tdmap" "$prefix/bin/tdmap"
install -m 644 "$build/libtdmap_rt.a" "$build/libmai.a" "$prefix/lib/"
install -m 755 "$build/libtdmap_rt.so" "$build/libmai.so" "$prefix/lib/"
for so in "$build"/libtdmap_mpi_*.so; do
  if [ -f "$so" ]; then install -m 755 "$so" "$prefix/lib/"; fi
done
install -m 644 "$root"/include/* "$prefix/include/"

# Man pages and completions come from the installed binary's own clap definition.
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
"$prefix/bin/tdmap" generate man "$gen/man"
"$prefix/bin/tdmap" generate completions "$gen/comp"
install -m 644 "$gen"/man/*.1 "$prefix/share/man/man1/"
install -m 644 "$gen/comp/tdmap.bash" "$prefix/share/bash-completion/completions/tdmap"
install -m 644 "$gen/comp/_tdmap" "$prefix/share/zsh/site-functions/_tdmap"
install -m 644 "$gen/comp/tdmap.fish" "$prefix/share/fish/vendor_completions.d/tdmap.fish"
echo "install: tdmap in $prefix/bin; add it to PATH, and $prefix/share/man to MANPATH"
