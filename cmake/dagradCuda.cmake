# The CUDA backend: built when a CUDA toolkit is found (nvcc needs no GPU to compile).
option(DAGRAD_CUDA "Build the CUDA backend when a CUDA toolkit is found" ON)
set(DAGRAD_WITH_CUDA OFF)
