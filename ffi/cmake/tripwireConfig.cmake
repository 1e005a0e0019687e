# The CMake package of an installed tripwire (ffi/install.sh):
#
#   find_package(tripwire 0.1 CONFIG REQUIRED)
#   target_link_libraries(engine PRIVATE tripwire::tripwire_static)
#
# Imported targets, each carrying the include directory:
#   tripwire::tripwire         the shared library, libtripwire.so.0
#   tripwire::tripwire_static  the static library, libtripwire.a, with the
#                              system libraries it needs (as rustc listed
#                              them when it was built)
# tripwire_VERSION is the library's version (tripwireConfigVersion.cmake).
#
# CMake gives executables in the build tree an RPATH to the shared
# library's directory; installed executables keep it only with
# INSTALL_RPATH_USE_LINK_PATH (or an INSTALL_RPATH naming it).

if(tripwire_FIND_COMPONENTS)
  set(tripwire_FOUND FALSE)
  set(tripwire_NOT_FOUND_MESSAGE
      "tripwire has no components (asked for: ${tripwire_FIND_COMPONENTS})")
  return()
endif()

include("${CMAKE_CURRENT_LIST_DIR}/tripwireTargets.cmake")
