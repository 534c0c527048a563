#!/usr/bin/env bash
# A newcomer's path through the front door, in order, as one test: the README's commands and the
# tour (after ./run.sh demo's build: this runs inside ./run.sh test), the install with a C and a
# C++ host built against it, then the Debian package with a script and a C host from it.
#   newcomer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
echo "==== README -> demo -> tour (tests/docs/docs_commands.sh)"
"$here/../docs/docs_commands.sh" "$1" "$2"
echo "==== install -> C host (tests/host/build_host.sh)"
"$here/../host/build_host.sh" "$1" "$2"
echo "==== .deb (tests/install/deb_package.sh)"
"$here/deb_package.sh" "$1" "$2"
echo "the newcomer's path ran end to end"
