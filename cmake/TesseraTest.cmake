# tessera_gtest(NAME [SYSTEMC] SOURCES ... LIBS ...): one googletest binary,
# every TEST registered with CTest. Each test runs in its own process
# (gtest_discover_tests filters one test per invocation), which SystemC needs:
# one simulation per process. SYSTEMC binaries start from sc_main.
# In the sanitizer lane's tree (TESSERA_SANITIZE) only the binaries of
# TESSERA_SANITIZE_TESTS are built and registered, labelled `sanitize`.
function(tessera_gtest name)
  cmake_parse_arguments(ARG "SYSTEMC" "" "SOURCES;LIBS" ${ARGN})
  if(TESSERA_SANITIZE)
    if(NOT name IN_LIST TESSERA_SANITIZE_TESTS)
      add_executable(${name} EXCLUDE_FROM_ALL ${ARG_SOURCES})
      target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock)
      return()
    endif()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  if(ARG_SYSTEMC)
    set(main tessera_sc_gtest_main)
  else()
    set(main GTest::gtest_main)
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock ${main})
  if(TESSERA_SANITIZE)
    target_link_libraries(${name} PRIVATE tessera_sanitizer_support)
    target_compile_options(${name} PRIVATE ${TESSERA_SANITIZE_UNOPTIMIZED})
    gtest_discover_tests(${name}
      DISCOVERY_TIMEOUT 60
      PROPERTIES TIMEOUT 600 LABELS sanitize
      ENVIRONMENT "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
    return()
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT 600 ENVIRONMENT "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1")
endfunction()
