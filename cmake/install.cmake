# Install rules: libiwarp.a, the public headers, iwarp.pc and a CMake
# package (find_package(iwarp) -> iwarp::iwarp). Both are relocatable, so
# `cmake --install build --prefix DIR` works for any DIR.
include(CMakePackageConfigHelpers)

set(IWARP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/iwarp)

install(TARGETS iwarp EXPORT iwarpTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Only include/iwarp/ is public; the layer headers next to the sources
# (mpa/, ddp/, rdmap/) are internal contracts.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/iwarp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")

install(EXPORT iwarpTargets NAMESPACE iwarp:: DESTINATION ${IWARP_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/iwarpConfig.cmake.in
  ${PROJECT_BINARY_DIR}/iwarpConfig.cmake
  INSTALL_DESTINATION ${IWARP_CMAKE_DIR})
# 0.x: the API may change between minor versions.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/iwarpConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/iwarpConfig.cmake
              ${PROJECT_BINARY_DIR}/iwarpConfigVersion.cmake
  DESTINATION ${IWARP_CMAKE_DIR})

# pkg-config: prefix is derived from the .pc file's own location.
set(IWARP_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
set(IWARP_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(IWARP_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(IWARP_PC_LIBDIR_EXPR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH IWARP_PC_UP "/r/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/r")
  string(REGEX REPLACE "/$" "" IWARP_PC_UP "${IWARP_PC_UP}")
  set(IWARP_PC_PREFIX "\${pcfiledir}/${IWARP_PC_UP}")
  set(IWARP_PC_LIBDIR_EXPR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(IWARP_PC_INCLUDEDIR_EXPR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(IWARP_PC_INCLUDEDIR_EXPR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# libiwarp is static only, so ISA-L is needed at link time: consumers use
# `pkg-config --static --libs iwarp`.
set(IWARP_PC_REQUIRES_PRIVATE "")
if(IWARP_HAVE_ISAL)
  set(IWARP_PC_REQUIRES_PRIVATE "libisal")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/iwarp.pc.in ${PROJECT_BINARY_DIR}/iwarp.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/iwarp.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
