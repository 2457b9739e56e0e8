# The one list of tensor-engine array sizes that get a Verilated RTL build
# (ROWSxCOLS). Each is its own model: Verilator fixes parameters at build time.
# The config library compiles this list in, so `tessera config show` and the
# rtl fidelity know which configs can run on RTL. Add a size here to build it.
set(TESSERA_TENSOR_ARRAY_SIZES "" CACHE INTERNAL "")
