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

# The lane's binaries: arch, driver, kernels, command line.
set(TESSERA_SANITIZE_TESTS
  arch_config_test arch_isa_test arch_numerics_test
  driver_test
  gemm_test gemm_multicore_test kernel_library_test kernel_bounds_test kernel_registry_test
  mlp_test attention_test conv2d_test collectives_test kernel_plugin_test
  cli_test regress_test sweep_test compare_test tune_test config_extremes_test calibrate_test)

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
  "LINKER:--export-dynamic-symbol=__ubsan_default_options"
  "LINKER:--export-dynamic-symbol=__sanitizer_start_switch_fiber"
  "LINKER:--export-dynamic-symbol=__sanitizer_finish_switch_fiber"
  "LINKER:--export-dynamic-symbol=qt_abort"
  "LINKER:--export-dynamic-symbol=sc_cor_qt_aborthelp")

# After every target is declared: the lane's one build target.
function(tessera_sanitize_targets)
  target_link_libraries(tessera PRIVATE tessera_sanitizer_support)
  add_custom_target(sanitize_tests)
  add_dependencies(sanitize_tests ${TESSERA_SANITIZE_TESTS})
endfunction()
