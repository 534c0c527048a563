# ASan+UBSan for the whole tree (the test command builds this configuration too).
if(SCRIPTPROF_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()

# Sanitized builds are for finding faults, not for speed: -O1 with line tables (the level the
# sanitizers' manuals suggest; reports still name every function and line) compiles in about
# half the time of -O2 -g. Given after the configuration's flags, these win.
if(SCRIPTPROF_SANITIZE OR SCRIPTPROF_TSAN)
  add_compile_options(-O1 -g1)
endif()
if(SCRIPTPROF_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 reports false "may be used uninitialized" in libstdc++'s <regex> (used by Catch2)
  # only when instrumenting; the normal build keeps the warning as an error.
  add_compile_options(-Wno-maybe-uninitialized)
endif()

# ThreadSanitizer: the C++ tests, whose threads profile states of their own. The Lua scripts
# run under the stock interpreter, which TSan cannot host, so that build leaves them out.
if(SCRIPTPROF_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

# An AngelScript host's code that takes or returns strings by value: AngelScript keeps value
# types on its script stack, aligned to 4 bytes, and hands them to registered functions there,
# so UBSan's alignment check would stop at every std::string the script passes (the other
# checks stay on).
function(scriptprof_angelscript_host target)
  if(SCRIPTPROF_SANITIZE)
    target_compile_options(${target} PRIVATE -fno-sanitize=alignment)
  endif()
endfunction()
