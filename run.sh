#!/usr/bin/env bash
# The project's two entry points (see README.md):
#   ./run.sh demo   install what is missing, build, profile samples/quickstart/work.lua
#   ./run.sh test   install what is missing, build, run the whole test suite: a normal build,
#                   an AddressSanitizer+UndefinedBehaviorSanitizer build, both through ctest,
#                   a ThreadSanitizer build of the threads and embedding tests, and every fuzz
#                   target for 60 s (clang)
#   ./run.sh bench [--quick]   install, build, run samples/bench (overhead, rate, accuracy,
#                   memory, formats, LuaJIT's profiler alongside); about 6 minutes, --quick 20 s
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(g++ clang libclang-rt-14-dev cmake make pkg-config lua5.4 liblua5.4-dev lua5.3 liblua5.3-dev lua5.2 liblua5.2-dev lua5.1 liblua5.1-0-dev libboost-context-dev catch2 nlohmann-json3-dev rapidjson-dev zlib1g-dev libcli11-dev golang-go luajit libluajit-5.1-dev love xvfb xauth luarocks valgrind angelscript-dev chromium time libcpp-httplib-dev curl ccache)
JOBS=$(nproc 2>/dev/null || echo 2)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

build() {  # build DIR [cmake args...] [-- targets...]
  local dir=$1; shift
  local args=() targets=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && shift && targets=(--target "$@")
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${args[@]}" >/dev/null
  cmake --build "$dir" -j"$JOBS" "${targets[@]}"
}

case "${1:-}" in
  demo)
    install_missing
    build build
    echo "== build/bin/luaprof --hz 1000 samples/quickstart/work.lua"
    build/bin/luaprof --hz 1000 samples/quickstart/work.lua
    ;;
  test)
    # Each phase says how long it took: CI has 90 minutes on 2 cores, and the whole should stay
    # under about 30.
    phase() { echo "== ($((SECONDS / 60)) min $((SECONDS % 60)) s in) $*"; }
    install_missing
    # One compiler cache for every build of the run: the Debian package's (a test builds it in
    # build/deb) compiles the same sources with the same flags as build/, and takes its objects
    # from the cache (paths below the checkout are compared relative to it).
    # The cache lives in the checkout (ignored, like the build folders): no home folder needed.
    export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 CCACHE_DIR=${CCACHE_DIR:-$PWD/build-ccache}
    export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
    phase "building build/"
    build build
    phase "tests (build/)"
    # (Without the releases whose layout another one already checks: `ctest -L release-matrix`.)
    (cd build && ctest --output-on-failure -j"$JOBS" -LE release-matrix)
    phase "building build-asan/"
    build build-asan -DSCRIPTPROF_SANITIZE=ON
    phase "tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)"
    (cd build-asan && ctest --output-on-failure -j"$JOBS")
    phase "building build-tsan/"
    build build-tsan -DSCRIPTPROF_TSAN=ON -- lua_threads_tests embed_tests angelscript_adapter_tests live_tests
    phase "C++ tests under ThreadSanitizer (build-tsan/): states on several threads, fibers, the C API"
    (cd build-tsan && ctest --output-on-failure -j"$JOBS")
    phase "building build-fuzz/"
    CC=clang CXX=clang++ build build-fuzz -DSCRIPTPROF_FUZZ=ON -DSCRIPTPROF_TESTS=OFF -DSCRIPTPROF_SAMPLES=OFF \
      -- fuzz_lispworks fuzz_folded fuzz_speedscope fuzz_sampler fuzz_lms fuzz_roundtrip
    phase "fuzzing every reader and the round trip, 60 s each, with coverage of the library (build-fuzz/)"
    tests/fuzz/run_fuzzers.sh build-fuzz 60
    phase "done"
    ;;
  bench)
    install_missing
    build build
    shift
    samples/bench/bench.sh build "$@"
    ;;
  *)
    echo "usage: ./run.sh demo | test | bench [--quick]" >&2
    exit 2
    ;;
esac
