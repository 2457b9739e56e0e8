# tessera_verilate(TARGET PREFIX TOP SOURCES... [SYSTEMC] [ARGS ...])
#
# Verilates one RTL top into TARGET with the project's flags, so every model is
# built the same way. One PREFIX per Verilated model (a tensor-engine size is its
# own model, since Verilator fixes parameters at build time).
set(TESSERA_RTL_DIR "${CMAKE_SOURCE_DIR}/rtl")

function(tessera_verilate target)
  cmake_parse_arguments(ARG "SYSTEMC" "PREFIX;TOP" "SOURCES;ARGS;INCLUDE_DIRS" ${ARGN})
  set(mode)
  if(ARG_SYSTEMC)
    set(mode SYSTEMC)
  endif()
  verilate(${target} ${mode} TRACE_FST
    PREFIX ${ARG_PREFIX}
    TOP_MODULE ${ARG_TOP}
    SOURCES ${ARG_SOURCES}
    INCLUDE_DIRS "${TESSERA_RTL_DIR}/common" ${ARG_INCLUDE_DIRS}
    # verilated.mk's -Os defaults would otherwise win over CMAKE_CXX_FLAGS.
    OPT_FAST -O3 OPT_SLOW -O1 OPT_GLOBAL -O2
    VERILATOR_ARGS --assert --x-assign fast --x-initial fast
                   "${TESSERA_RTL_DIR}/lint/verilator_waiver.vlt"
                   ${ARG_ARGS})
  if(ARG_SYSTEMC)
    verilator_link_systemc(${target})
  endif()
  # Verilator's runtime headers are not ours to keep warning-free, in the
  # model's own sources and in every target that includes its header (GCC
  # takes a directory given both -I, as verilate() passes it on, and
  # -isystem as a system one).
  target_include_directories(${target} SYSTEM PUBLIC
    "${VERILATOR_ROOT}/include" "${VERILATOR_ROOT}/include/vltstd")
  # Its runtime sources are compiled into the target with our warning flags.
  target_compile_options(${target} PRIVATE -Wno-unused-parameter)
  if(TESSERA_SANITIZE)
    # The sanitizer lane (cmake/TesseraSanitize.cmake) instruments our code,
    # not Verilator's: generated and runtime sources compile without, which
    # takes minutes off the lane's build.
    get_target_property(sources ${target} SOURCES)
    foreach(source ${sources})
      if(source MATCHES "/${ARG_PREFIX}\\.dir/.*\\.cpp$" OR source MATCHES "^${VERILATOR_ROOT}/include/.*\\.cpp$")
        set_property(SOURCE "${source}" APPEND_STRING PROPERTY COMPILE_FLAGS " -fno-sanitize=all")
      endif()
    endforeach()
  endif()
endfunction()
