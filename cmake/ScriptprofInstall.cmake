# Installing: libraries, headers, the CMake package (find_package(scriptprof)) and a
# pkg-config file, so a host builds against an installed scriptprof either way.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
# A LuaRocks build installs the module and the tools only (a rock's lib/ holds Lua modules).
# The package files find Debian's lua5.4: a build for a Lua under SCRIPTPROF_LUA_PREFIX installs
# the modules and tools alone unless asked.
if(SCRIPTPROF_LUA_PREFIX)
  option(SCRIPTPROF_INSTALL_DEV "Install the libraries, headers and package files" OFF)
else()
  option(SCRIPTPROF_INSTALL_DEV "Install the libraries, headers and package files" ON)
endif()
set(SCRIPTPROF_LUA_MODULE_DIR "${CMAKE_INSTALL_LIBDIR}/lua/${LUA_VERSION}" CACHE STRING "Where the module for the build's Lua is installed")
if(SCRIPTPROF_INSTALL_DEV)

# Installed names match the aliases the build uses: scriptprof::core, ::native, ::lua, ::embed.
foreach(name core native lua embed warnings)
  set_target_properties(scriptprof_${name} PROPERTIES EXPORT_NAME ${name})
endforeach()
set(SCRIPTPROF_WITH_ANGELSCRIPT OFF)
set(installed scriptprof_core scriptprof_native scriptprof_lua scriptprof_embed scriptprof_warnings)
if(TARGET scriptprof_angelscript)
  # The AngelScript adapter: scriptprof::angelscript, its headers, and the module that finds
  # AngelScript (Debian's has no pkg-config file) for the package's users.
  set(SCRIPTPROF_WITH_ANGELSCRIPT ON)
  set_target_properties(scriptprof_angelscript PROPERTIES EXPORT_NAME angelscript)
  list(APPEND installed scriptprof_angelscript)
  install(DIRECTORY runtimes/angelscript/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/scriptprof/angelscript
    FILES_MATCHING PATTERN "*.hpp")
  install(FILES cmake/FindAngelScript.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/scriptprof)
endif()
set(SCRIPTPROF_WITH_HTTP OFF)
if(TARGET scriptprof_serve)
  # Serving a host's profiles (scriptprof_serve, scriptprof/serve.hpp) on Debian's cpp-httplib:
  # scriptprof::serve and scriptprof-serve.pc, which a host links only when it serves.
  set(SCRIPTPROF_WITH_HTTP ON)
  set_target_properties(scriptprof_http PROPERTIES EXPORT_NAME http)
  set_target_properties(scriptprof_serve PROPERTIES EXPORT_NAME serve)
  list(APPEND installed scriptprof_http scriptprof_serve)
endif()
install(TARGETS ${installed}
  EXPORT scriptprofTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY core/include/ bindings/c/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_BINARY_DIR}/generated/include/scriptprof/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/scriptprof)
install(DIRECTORY runtimes/native/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/scriptprof/native
  FILES_MATCHING PATTERN "*.hpp")
install(DIRECTORY runtimes/lua/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/scriptprof/lua
  FILES_MATCHING PATTERN "*.hpp")
install(EXPORT scriptprofTargets NAMESPACE scriptprof:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/scriptprof)
configure_package_config_file(cmake/scriptprofConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/scriptprofConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/scriptprof)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/scriptprofConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/scriptprofConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/scriptprofConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/scriptprof)
set(SCRIPTPROF_PC_ADAPTERS "")
set(SCRIPTPROF_PC_RUNTIMES "")
if(SCRIPTPROF_WITH_ANGELSCRIPT)
  set(SCRIPTPROF_PC_ADAPTERS " -lscriptprof_angelscript")
  set(SCRIPTPROF_PC_RUNTIMES " ${AngelScript_LIBRARY}")
endif()
file(RELATIVE_PATH SCRIPTPROF_PC_TO_PREFIX "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
configure_file(cmake/scriptprof.pc.in ${CMAKE_CURRENT_BINARY_DIR}/scriptprof.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/scriptprof.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(SCRIPTPROF_WITH_HTTP)
  configure_file(cmake/scriptprof-serve.pc.in ${CMAKE_CURRENT_BINARY_DIR}/scriptprof-serve.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/scriptprof-serve.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
endif()

# The tools and the Lua modules: luaprof, profconv and profdiff (and luajitprof, asprof) in bin/, the module where
# each Lua looks under the prefix (lib/lua/5.X for PUC Lua 5.X, lib/lua/5.1 for LuaJIT), so
# `require "profiler"` works with LUA_CPATH (or package.cpath) pointing there.
install(TARGETS luaprof profconv profdiff RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The 5.1 ABI's modules (LuaJIT's, PUC 5.1's) go under scriptprof/ beside the loader that picks one.
if(SCRIPTPROF_ROCK_LUA STREQUAL "5.1")  # a rock: its Lua's alone
  install(TARGETS profiler_abi51 LIBRARY DESTINATION ${SCRIPTPROF_LUA_MODULE_DIR})
  install(TARGETS profiler_51 LIBRARY DESTINATION ${SCRIPTPROF_LUA_MODULE_DIR}/scriptprof)
elseif(SCRIPTPROF_ROCK_LUA AND NOT SCRIPTPROF_ROCK_LUA STREQUAL LUA_VERSION)
  string(REPLACE "." "" v ${SCRIPTPROF_ROCK_LUA})
  install(TARGETS profiler_${v} LIBRARY DESTINATION ${SCRIPTPROF_LUA_MODULE_DIR})
else()
  install(TARGETS profiler LIBRARY DESTINATION ${SCRIPTPROF_LUA_MODULE_DIR})
endif()
if(NOT SCRIPTPROF_ROCK_LUA)
  foreach(version ${SCRIPTPROF_OTHER_LUAS})
    string(REPLACE "." "" v ${version})
    if(version STREQUAL "5.1")
      install(TARGETS profiler_51 LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/lua/5.1/scriptprof)
    else()
      install(TARGETS profiler_${v} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/lua/${version})
    endif()
  endforeach()
  if(TARGET profiler_abi51)
    install(TARGETS profiler_abi51 LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/lua/5.1)
  endif()
endif()
# The profile server's HTTP library (core/CMakeLists.txt) goes with the libraries, or for a rock
# beside the module (LuaRocks deploys a rock's lib/ into the tree's lib/lua/5.X). The server
# looks beside the object it is in and a few folders up (the modules), then, from bin/, here.
if(TARGET scriptprof_httplib)
  if(SCRIPTPROF_INSTALL_DEV)
    set(http_dir ${CMAKE_INSTALL_LIBDIR})
  else()
    set(http_dir ${SCRIPTPROF_LUA_MODULE_DIR})
  endif()
  install(TARGETS scriptprof_httplib LIBRARY DESTINATION ${http_dir})
  set(bin_dir ${CMAKE_INSTALL_BINDIR})
  foreach(dir http_dir bin_dir)
    if(NOT IS_ABSOLUTE "${${dir}}")
      set(${dir} "${CMAKE_INSTALL_PREFIX}/${${dir}}")
    endif()
  endforeach()
  file(RELATIVE_PATH http_from_bin "${bin_dir}" "${http_dir}")
  if(SCRIPTPROF_ROCK_LUA)  # LuaRocks deploys bin/ into the tree's bin/, lib/ into its lib/lua/5.X
    set(http_from_bin "../lib/lua/${SCRIPTPROF_ROCK_LUA}")
  endif()
  target_compile_definitions(scriptprof_http PRIVATE SCRIPTPROF_HTTP_INSTALL_DIR="${http_dir}"
    SCRIPTPROF_HTTP_FROM_BIN="${http_from_bin}")
endif()
if(TARGET asprof AND SCRIPTPROF_INSTALL_DEV)
  install(TARGETS asprof RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET luajitprof AND SCRIPTPROF_INSTALL_DEV)
  install(TARGETS luajitprof RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES $<TARGET_FILE:profiler_luajit> DESTINATION ${CMAKE_INSTALL_LIBDIR}/lua/5.1/scriptprof RENAME luajit.so)
endif()
