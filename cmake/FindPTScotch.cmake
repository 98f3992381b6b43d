# Finds PT-Scotch (distributed graph partitioning) in its 64-bit-index build (SCOTCH_Num =
# int64_t), so no global id or edge offset is ever narrowed. Debian ships it in libptscotch-dev
# under scotch-int64; PTSCOTCH_ROOT points elsewhere. Provides PTScotch::PTScotch.
#
# The libraries are linked by full path, each one directly: the default libptscotch-7.0.so of the
# same soname is the 32-bit build, and only a direct dependency found through the build's RPATH
# makes the loader take the 64-bit one.
set(_pts_lib_dirs ${PTSCOTCH_ROOT}/lib ${PTSCOTCH_ROOT}/lib64
    /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/scotch-int64)
find_path(PTSCOTCH_INCLUDE_DIR ptscotch.h NO_DEFAULT_PATH
          PATHS ${PTSCOTCH_ROOT}/include /usr/include/scotch-int64)
find_library(PTSCOTCH_LIBRARY ptscotch NO_DEFAULT_PATH PATHS ${_pts_lib_dirs})
find_library(PTSCOTCH_ERR_LIBRARY ptscotcherr NO_DEFAULT_PATH PATHS ${_pts_lib_dirs})
if(PTSCOTCH_INCLUDE_DIR AND EXISTS "${PTSCOTCH_INCLUDE_DIR}/scotch.h")
  file(STRINGS "${PTSCOTCH_INCLUDE_DIR}/scotch.h" _pts_num REGEX "^typedef .* SCOTCH_Num;")
  if(NOT _pts_num MATCHES "int64_t")
    message(FATAL_ERROR "PT-Scotch at ${PTSCOTCH_INCLUDE_DIR} has a 32-bit SCOTCH_Num "
                        "(${_pts_num}); halognn needs the 64-bit build (Debian: scotch-int64)")
  endif()
  file(STRINGS "${PTSCOTCH_INCLUDE_DIR}/scotch.h" _pts_ver REGEX "#define SCOTCH_(VERSION|RELEASE|PATCHLEVEL) ")
  string(REGEX REPLACE ".*VERSION +([0-9]+).*RELEASE +([0-9]+).*PATCHLEVEL +([0-9]+).*" "\\1.\\2.\\3"
         PTSCOTCH_VERSION "${_pts_ver}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(PTScotch REQUIRED_VARS PTSCOTCH_LIBRARY PTSCOTCH_ERR_LIBRARY
                                  PTSCOTCH_INCLUDE_DIR VERSION_VAR PTSCOTCH_VERSION)
if(PTScotch_FOUND AND NOT TARGET PTScotch::PTScotch)
  add_library(PTScotch::PTScotch INTERFACE IMPORTED)
  set_target_properties(PTScotch::PTScotch PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${PTSCOTCH_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${PTSCOTCH_LIBRARY};${PTSCOTCH_ERR_LIBRARY}")
endif()
