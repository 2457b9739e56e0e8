# libFuzzer harnesses (clang only): the `fuzz` preset sets TESSERA_FUZZ=ON,
# which instruments the code with coverage, AddressSanitizer and UBSan and
# builds only the parsers' libraries and their harnesses (scripts/fuzz).
function(tessera_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
endfunction()
