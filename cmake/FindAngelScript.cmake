# Finds AngelScript (Debian's angelscript-dev: angelscript.h, a static libangelscript.a and the
# add-ons in libangelscript-addon, no pkg-config file).
#   AngelScript::angelscript  the library, with its thread dependency
#   AngelScript::addons       the add-ons (scriptbuilder, scriptstdstring, scriptarray, ...)
find_path(AngelScript_INCLUDE_DIR angelscript.h)
find_library(AngelScript_LIBRARY NAMES libangelscript.a angelscript)
find_library(AngelScript_ADDON_LIBRARY NAMES libangelscript-addon.a angelscript-addon)
find_path(AngelScript_ADDON_INCLUDE_DIR scriptbuilder.h PATH_SUFFIXES angelscript)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(AngelScript REQUIRED_VARS AngelScript_LIBRARY AngelScript_INCLUDE_DIR)

if(AngelScript_FOUND AND NOT TARGET AngelScript::angelscript)
  find_package(Threads REQUIRED)
  add_library(AngelScript::angelscript UNKNOWN IMPORTED)
  set_target_properties(AngelScript::angelscript PROPERTIES
    IMPORTED_LOCATION "${AngelScript_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${AngelScript_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
  # Debian builds AngelScript and its add-ons in namespace AngelScript: every user must then
  # compile with AS_USE_NAMESPACE, or the add-ons' C++ symbols do not link. Only a C++ project
  # compiles against them: a C host (scriptprof's C API) only links the library.
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(AngelScript_ADDON_LIBRARY AND AngelScript_ADDON_INCLUDE_DIR AND "CXX" IN_LIST languages)
    include(CheckCXXSourceCompiles)
    set(CMAKE_REQUIRED_INCLUDES ${AngelScript_INCLUDE_DIR} ${AngelScript_ADDON_INCLUDE_DIR})
    set(CMAKE_REQUIRED_LIBRARIES ${AngelScript_ADDON_LIBRARY} ${AngelScript_LIBRARY} Threads::Threads)
    set(CMAKE_REQUIRED_DEFINITIONS -DAS_USE_NAMESPACE)
    check_cxx_source_compiles("#include <scriptstdstring.h>
      int main() { AngelScript::asIScriptEngine* e = AngelScript::asCreateScriptEngine(); AngelScript::RegisterStdString(e); return 0; }"
      AngelScript_IN_NAMESPACE)
    unset(CMAKE_REQUIRED_INCLUDES)
    unset(CMAKE_REQUIRED_LIBRARIES)
    unset(CMAKE_REQUIRED_DEFINITIONS)
    if(AngelScript_IN_NAMESPACE)
      set_property(TARGET AngelScript::angelscript PROPERTY INTERFACE_COMPILE_DEFINITIONS AS_USE_NAMESPACE)
    endif()
    add_library(AngelScript::addons UNKNOWN IMPORTED)
    set_target_properties(AngelScript::addons PROPERTIES
      IMPORTED_LOCATION "${AngelScript_ADDON_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${AngelScript_ADDON_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES AngelScript::angelscript)
  endif()
endif()
mark_as_advanced(AngelScript_INCLUDE_DIR AngelScript_LIBRARY AngelScript_ADDON_LIBRARY AngelScript_ADDON_INCLUDE_DIR)
