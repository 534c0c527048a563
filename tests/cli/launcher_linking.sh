#!/bin/sh
# launcher_linking.sh LAUNCHER SHARED_LIBRARY PROBE_DIR: the launcher carries its interpreter as
# the stock one does (no NEEDED entry for SHARED_LIBRARY, e.g. libluajit-5.1.so), and a C module
# that takes Lua's API from the program (PROBE_DIR/api_probe.so) still loads and runs under it.
set -eu
launcher=$1 shared=$2 probe_dir=$3
if ! command -v readelf >/dev/null; then echo "SKIP: no readelf"; exit 77; fi
if readelf -d "$launcher" | grep NEEDED | grep -F "$shared"; then
  echo "FAIL: $launcher needs $shared: the interpreter is linked shared (slower than the stock one)"
  exit 1
fi
out=$("$launcher" -e "package.cpath = '$probe_dir/?.so'
  local probe = require('api_probe')
  assert(probe.add(2, 3) == 5, 'api_probe.add')
  print('api_probe ok')" 2>&1) || { echo "FAIL: $launcher could not run a C module:"; echo "$out"; exit 1; }
case $out in
  *"api_probe ok"*) echo "PASS: $launcher links no $shared and exports Lua's API" ;;
  *) echo "FAIL: $launcher printed:"; echo "$out"; exit 1 ;;
esac
