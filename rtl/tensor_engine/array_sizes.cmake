# The one list of tensor-engine array sizes that get a Verilated RTL build
# (ROWSxCOLS). Each is its own model: Verilator fixes parameters at build time.
# The config library compiles this list in, so `tessera config show` and the
# rtl fidelity know which configs can run on RTL. Add a size here to build it.
#   8x8: tiny    32x32: small    128x128: neuroncore-v1 .. v4
set(TESSERA_TENSOR_ARRAY_SIZES "8x8;32x32;128x128" CACHE INTERNAL "")
# The sanitizer lane's tree (cmake/TesseraSanitize.cmake) builds the first,
# tiny's, only: its tests run RTL on tiny alone.
if(TESSERA_SANITIZE)
  list(GET TESSERA_TENSOR_ARRAY_SIZES 0 tessera_smallest_array)
  set(TESSERA_TENSOR_ARRAY_SIZES "${tessera_smallest_array}" CACHE INTERNAL "")
endif()

# The widest stationary beat every build takes, in columns: the RTL's
# LoadCols parameter and the C++ drivers' port layout. A config's
# tensor.stationary_columns_per_cycle may be anything from 1 to this on RTL.
set(TESSERA_TENSOR_LOAD_COLUMNS 4 CACHE INTERNAL "")
