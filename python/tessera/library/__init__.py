"""Library kernels written in Python, against the same KernelBuilder as the
C++ ones: importing a module registers its kernel (py_gemm, py_softmax).
They build byte-identical programs to kernels/gemm and kernels/softmax
(python/tests/test_library_kernels.py)."""
