#!/usr/bin/env bash
# Builds the Debian package: a build for /usr (so the modules land where Debian's Lua packages
# look, /usr/lib/<multiarch>/lua/5.X) without tests or samples, then cpack -G DEB. Prints the
# path of the .deb.
#   packaging/deb.sh [BUILD_DIR]      (default: build-deb)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$src/build-deb}
cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DSCRIPTPROF_TESTS=OFF -DSCRIPTPROF_SAMPLES=OFF >/dev/null
cmake --build "$dir" -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
(cd "$dir" && cpack -G DEB >/dev/null)
ls "$dir"/scriptprof_*.deb
