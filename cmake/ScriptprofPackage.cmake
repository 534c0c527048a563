# A Debian package of what `cmake --install` installs (cpack -G DEB, through packaging/deb.sh):
# the tools, a module for each Lua the build found, the libraries, headers, CMake package and
# scriptprof.pc. Configured with CMAKE_INSTALL_PREFIX=/usr, the modules land where Debian's Lua
# packages look: /usr/lib/<multiarch>/lua/5.X (LuaJIT and PUC 5.1 share lua/5.1).
set(CPACK_PACKAGE_NAME scriptprof)
set(CPACK_PACKAGE_VENDOR "scriptprof")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "statistical profiler for Lua 5.1-5.5, LuaJIT and AngelScript")
set(CPACK_PACKAGE_DESCRIPTION "An embeddable statistical profiler with Guile statprof's semantics: luaprof,
luajitprof and asprof run scripts under it; the profiler module loads into each Lua; profconv
and profdiff read and compare saved profiles; the C and C++ API embeds it in a host.")
set(CPACK_PACKAGE_CONTACT "scriptprof maintainers <scriptprof@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)  # the build's debug information is not for a package (400 MB of it)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The shared libraries the tools and modules need (Lua, LuaJIT, zlib, libstdc++, and cpp-httplib
# for libscriptprof_httplib.so), from the files.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A host built against the headers and package files finds Lua 5.4 and zlib through them.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "liblua5.4-dev, zlib1g-dev, pkg-config")
set(CPACK_GENERATOR DEB)
include(CPack)
