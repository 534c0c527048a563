# Warnings are errors in our own code: the build stays warning-free.
add_library(scriptprof_warnings INTERFACE)
target_compile_options(scriptprof_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor> -Wconversion
  -Wno-sign-conversion -Werror)
