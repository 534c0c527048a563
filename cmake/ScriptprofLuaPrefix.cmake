# Where the build's Lua comes from when it is not Debian's lua5.4.

# scriptprof_lua_header_version(INCLUDE_DIR OUT): the version ("5.3") of the Lua whose lua.h is
# in INCLUDE_DIR, or "" when it cannot be read.
function(scriptprof_lua_header_version include_dir out)
  set(${out} "" PARENT_SCOPE)
  if(NOT EXISTS ${include_dir}/lua.h)
    return()
  endif()
  # 5.5 defines the numbers (LUA_VERSION_MINOR_N 5); 5.2 to 5.4 the strings ("4"); every
  # release up to 5.4, LUA_VERSION_NUM (501) too, 5.1 nothing else.
  file(STRINGS ${include_dir}/lua.h lines REGEX "^#define[ \t]+LUA_VERSION_(MAJOR|MINOR|NUM)(_N)?[ \t]")
  set(major "")
  set(minor "")
  foreach(line ${lines})
    if(line MATCHES "LUA_VERSION_NUM[ \t]+([0-9])0([0-9])")
      set(major ${CMAKE_MATCH_1})
      set(minor ${CMAKE_MATCH_2})
    elseif(line MATCHES "LUA_VERSION_MAJOR(_N)?[ \t]+\"?([0-9]+)")
      set(major ${CMAKE_MATCH_2})
    elseif(line MATCHES "LUA_VERSION_MINOR(_N)?[ \t]+\"?([0-9]+)")
      set(minor ${CMAKE_MATCH_2})
    endif()
  endforeach()
  if(NOT major STREQUAL "" AND NOT minor STREQUAL "")
    set(${out} ${major}.${minor} PARENT_SCOPE)
  endif()
endfunction()

# scriptprof_lua_from_prefix(PREFIX): the Lua installed under PREFIX (include/lua.h,
# lib/liblua.a, as ../shared/lua/build.sh lays it out) as the build's Lua: PkgConfig::LUA (its
# headers and static library, for the runners and test hosts; the module links no Lua),
# LUA_INCLUDE_DIRS and LUA_VERSION ("5.5"), as pkg-config gives them for Debian's.
function(scriptprof_lua_from_prefix prefix)
  get_filename_component(prefix ${prefix} ABSOLUTE)
  if(NOT EXISTS ${prefix}/include/lua.h OR NOT EXISTS ${prefix}/lib/liblua.a)
    message(FATAL_ERROR "SCRIPTPROF_LUA_PREFIX=${prefix}: no include/lua.h and lib/liblua.a there")
  endif()
  scriptprof_lua_header_version(${prefix}/include version)
  if(version STREQUAL "")
    message(FATAL_ERROR "SCRIPTPROF_LUA_PREFIX=${prefix}: cannot read the version from include/lua.h")
  endif()
  if(NOT version MATCHES "^5\\.[2-5]$")
    message(FATAL_ERROR "SCRIPTPROF_LUA_PREFIX=${prefix}: Lua ${version}; the Lua adapter serves 5.2 to 5.5")
  endif()
  add_library(PkgConfig::LUA INTERFACE IMPORTED GLOBAL)
  set_target_properties(PkgConfig::LUA PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES ${prefix}/include
    INTERFACE_LINK_LIBRARIES "${prefix}/lib/liblua.a;m;dl")
  # A host linked with a static Lua exports its symbols, so the modules it loads find them.
  set_property(TARGET PkgConfig::LUA APPEND PROPERTY INTERFACE_LINK_OPTIONS "-Wl,-E")
  set(LUA_INCLUDE_DIRS ${prefix}/include PARENT_SCOPE)
  set(LUA_VERSION ${version} PARENT_SCOPE)
  message(STATUS "scriptprof: Lua ${version} from ${prefix}")
endfunction()
