# What `cmake --install` puts under the prefix:
#   lib/libingot.a, lib/libingot.so.MAJOR (and its links)   the runtime
#   include/ingot.h                                         its whole API
#   bin/ingot                                               the tools (not in a runtime-only build)
#   bin/ingot-measure                                       the run-only measuring program (driver.h)
#   lib/cmake/ingot/                                        find_package(ingot CONFIG) -> ingot::runtime,
#                                                           ingot::runtime_shared
#   lib/pkgconfig/ingot.pc                                  pkg-config ingot (shared; --static for libingot.a)
include(CMakePackageConfigHelpers)

install(TARGETS ingot_runtime ingot_runtime_shared EXPORT ingotTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/runtime/ingot.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET ingot)
  install(TARGETS ingot RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET ingot-measure)
  install(TARGETS ingot-measure RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(INGOT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ingot)
install(EXPORT ingotTargets NAMESPACE ingot:: FILE ingotTargets.cmake DESTINATION ${INGOT_CMAKE_DIR})
set(INGOT_CONFIG_SIGNATURES ${INGOT_SIGNATURES})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ingotConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/ingotConfig.cmake INSTALL_DESTINATION ${INGOT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ingotConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ingotConfig.cmake ${PROJECT_BINARY_DIR}/ingotConfigVersion.cmake
        DESTINATION ${INGOT_CMAKE_DIR})

# What libingot needs is what a static consumer links: libsodium only with
# INGOT_SIGNATURES (the config file reads the same flag).
if(INGOT_SIGNATURES)
  set(INGOT_PC_REQUIRES_PRIVATE "libzstd libsodium")
else()
  set(INGOT_PC_REQUIRES_PRIVATE "libzstd")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/ingot.pc.in ${PROJECT_BINARY_DIR}/ingot.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ingot.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
