# tessera_gtest(NAME [SYSTEMC] SOURCES ... LIBS ...): one googletest binary,
# every TEST registered with CTest. Each test runs in its own process
# (gtest_discover_tests filters one test per invocation), which SystemC needs:
# one simulation per process. SYSTEMC binaries start from sc_main.
function(tessera_gtest name)
  cmake_parse_arguments(ARG "SYSTEMC" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  if(ARG_SYSTEMC)
    set(main tessera_sc_gtest_main)
  else()
    set(main GTest::gtest_main)
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock ${main})
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT 600 ENVIRONMENT "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1")
endfunction()
