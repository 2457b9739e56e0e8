# The sanitizer lane (the `asan` preset, build-asan/, scripts/sanitize;
# docs/reliability.md, Sanitizers): gcc's AddressSanitizer (with
# LeakSanitizer) and UBSan, every UBSan finding fatal, over the unit tests
# of arch, driver, kernels and the command line. Only the binaries listed
# here are built and registered; their tests carry the label `sanitize`.
# The tree Verilates the smallest tensor-engine array and DMA parameter set
# only (rtl/tensor_engine/array_sizes.cmake, systemc_models/cosim), the ones
# of the `tiny` config, so configs with bigger arrays have no RTL build here.

set(TESSERA_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
add_compile_options(${TESSERA_SANITIZE_FLAGS})
add_link_options(-fsanitize=address,undefined)

# The lane's binaries: arch, driver, kernels, command line. `ci` (the
# default, what ./scripts/test runs) is one binary or two per layer, chosen
# so that the lane's cold build fits the CI budget (docs/reliability.md,
# Sanitizers); `all` (scripts/sanitize --all) is every unit test of those
# layers.
set(TESSERA_SANITIZE_SET ci CACHE STRING "The sanitizer lane's test binaries: ci (a few per layer) or all")
set_property(CACHE TESSERA_SANITIZE_SET PROPERTY STRINGS ci all)
if(TESSERA_SANITIZE_SET STREQUAL "ci")
  set(TESSERA_SANITIZE_TESTS
    arch_config_test arch_isa_test arch_numerics_test
    driver_test
    gemm_test kernel_registry_test
    cli_test config_extremes_test)
elseif(TESSERA_SANITIZE_SET STREQUAL "all")
  set(TESSERA_SANITIZE_TESTS
    arch_config_test arch_isa_test arch_numerics_test
    driver_test
    gemm_test gemm_multicore_test kernel_library_test kernel_bounds_test kernel_registry_test
    mlp_test attention_test conv2d_test collectives_test kernel_plugin_test
    cli_test regress_test sweep_test compare_test tune_test config_extremes_test calibrate_test)
else()
  message(FATAL_ERROR "TESSERA_SANITIZE_SET is '${TESSERA_SANITIZE_SET}': expected ci or all")
endif()

# Every report (ASan, LeakSanitizer, UBSan) of every process, the `tessera`
# children of the command-line tests included, lands in this folder, so a
# finding fails the lane even where a test looks only at a child's output
# (scripts/sanitize fails when the folder holds a report).
set(TESSERA_SANITIZE_REPORTS "${CMAKE_BINARY_DIR}/sanitizer-reports")
file(MAKE_DIRECTORY "${TESSERA_SANITIZE_REPORTS}")

# Linked into every executable of the lane: the sanitizers' options
# (sanitizer_options.cpp), and SystemC's coroutine stacks told to ASan where
# libsystemc does not (sanitizer_fibers.cpp), its definitions exported so
# that libsystemc binds to them.
set(testing "${CMAKE_SOURCE_DIR}/systemc_models/testing")
add_library(tessera_sanitizer_support OBJECT "${testing}/sanitizer_options.cpp" "${testing}/sanitizer_fibers.cpp")
target_compile_definitions(tessera_sanitizer_support PRIVATE TESSERA_SANITIZE_REPORTS="${TESSERA_SANITIZE_REPORTS}")
target_link_libraries(tessera_sanitizer_support PUBLIC ${CMAKE_DL_LIBS})
target_link_options(tessera_sanitizer_support INTERFACE
  "LINKER:--export-dynamic-symbol=__asan_default_options"
  "LINKER:--export-dynamic-symbol=__sanitizer_start_switch_fiber"
  "LINKER:--export-dynamic-symbol=__sanitizer_finish_switch_fiber"
  "LINKER:--export-dynamic-symbol=qt_abort"
  "LINKER:--export-dynamic-symbol=sc_cor_qt_aborthelp")

# The lane's cold build is what CI pays for it, so its flags are chosen for
# compile time (measured on driver/cli/regress.cpp, CPU s): -O1 -g 40,
# -O1 -g1 27, -Og -g1 19, -O0 -g1 15. The libraries, which simulate, take
# the preset's -Og -g1 (line tables: a report still names file and line);
# the command line and the test programs, which mostly parse and compare,
# take -O0 (tessera_gtest).
set(TESSERA_SANITIZE_UNOPTIMIZED -O0)

# After every target is declared: the lane's one build target.
function(tessera_sanitize_targets)
  target_link_libraries(tessera PRIVATE tessera_sanitizer_support)
  target_compile_options(tessera PRIVATE ${TESSERA_SANITIZE_UNOPTIMIZED})
  add_custom_target(sanitize_tests)
  add_dependencies(sanitize_tests ${TESSERA_SANITIZE_TESTS})
endfunction()
