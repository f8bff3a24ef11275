"""The CUDA backend (docs/gpu.md): L3 lowered to the gpu dialect (L4), printed as
PTX, loaded and launched through a Driver (pycuda, cuda-bindings, or the PTX
simulator in tests). Importing this package imports no CUDA library."""
