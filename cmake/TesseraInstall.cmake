# cmake --install: the libraries, the headers a kernel author includes, the
# `tessera` binary, the shipped configs and a CMake package, so that a
# separate project can find_package(Tessera) and link Tessera::kernels
# (docs/kernel-guide.md, "A kernel in your own project").
#
#   <prefix>/bin/tessera
#   <prefix>/lib/libtessera_{arch,core,cosim,driver,kernels}.so
#   <prefix>/include/tessera/{tessera,arch,common,<kernel>}/*.h
#   <prefix>/share/tessera/configs/          (found by the installed libraries)
#   <prefix>/lib/cmake/Tessera/              (TesseraConfig.cmake, targets)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TESSERA_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/tessera")
set(TESSERA_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Tessera")

set(tessera_libraries tessera_arch tessera_core tessera_cosim tessera_driver tessera_kernels)
foreach(lib IN LISTS tessera_libraries)
  string(REPLACE "tessera_" "" short "${lib}")
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${short})
  # Verilator's verilate() adds its generated model directories as public
  # include paths; they belong to the build tree only.
  get_target_property(dirs ${lib} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT dirs)
    set(dirs "")
  endif()
  set(kept "")
  foreach(dir IN LISTS dirs)
    if(dir MATCHES "^\\$<")
      list(APPEND kept "${dir}")
    else()
      list(APPEND kept "$<BUILD_INTERFACE:${dir}>")
    endif()
  endforeach()
  set_target_properties(${lib} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${kept}")
  target_include_directories(${lib} INTERFACE "$<INSTALL_INTERFACE:${TESSERA_INSTALL_INCLUDEDIR}>")
endforeach()

# What the build gets from the top-level flags, an installed user gets here.
target_compile_options(tessera_arch INTERFACE "$<INSTALL_INTERFACE:-ffp-contract=off>")

install(TARGETS ${tessera_libraries} tessera
  EXPORT TesseraTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

# The public headers: the driver API, the hardware contract it includes, the
# registry and each library kernel's header.
install(DIRECTORY "${CMAKE_SOURCE_DIR}/driver/include/tessera" DESTINATION "${TESSERA_INSTALL_INCLUDEDIR}")
install(DIRECTORY "${CMAKE_SOURCE_DIR}/systemc_models/arch" DESTINATION "${TESSERA_INSTALL_INCLUDEDIR}"
  FILES_MATCHING PATTERN "*.h" PATTERN "tests" EXCLUDE)
install(DIRECTORY "${CMAKE_SOURCE_DIR}/kernels/" DESTINATION "${TESSERA_INSTALL_INCLUDEDIR}"
  FILES_MATCHING PATTERN "*.h" PATTERN "tests" EXCLUDE)
# The tuning database sits beside the generations it was tuned on, so an
# installed tree's default runs get the same tilings.
install(DIRECTORY "${CMAKE_SOURCE_DIR}/configs/" DESTINATION "${CMAKE_INSTALL_DATADIR}/tessera/configs"
  FILES_MATCHING PATTERN "*.yaml" PATTERN "tuning.json")

install(EXPORT TesseraTargets NAMESPACE Tessera:: DESTINATION "${TESSERA_INSTALL_CMAKEDIR}")
configure_package_config_file("${CMAKE_SOURCE_DIR}/cmake/TesseraConfig.cmake.in"
  "${CMAKE_BINARY_DIR}/cmake/TesseraConfig.cmake" INSTALL_DESTINATION "${TESSERA_INSTALL_CMAKEDIR}")
write_basic_package_version_file("${CMAKE_BINARY_DIR}/cmake/TesseraConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_BINARY_DIR}/cmake/TesseraConfig.cmake" "${CMAKE_BINARY_DIR}/cmake/TesseraConfigVersion.cmake"
  DESTINATION "${TESSERA_INSTALL_CMAKEDIR}")

# The install and the out-of-tree example project built against it (CI runs it with every test run).
add_test(NAME install.example_project
  COMMAND bash "${CMAKE_SOURCE_DIR}/docs/examples/install_test.sh" "${CMAKE_BINARY_DIR}" "${CMAKE_SOURCE_DIR}"
          "${CMAKE_BINARY_DIR}/install-test" "${TESSERA_PYTHON_EXECUTABLE}")
set_tests_properties(install.example_project PROPERTIES TIMEOUT 900)
