# The CUDA backend: built when a CUDA toolkit is found (nvcc needs no GPU to compile).
option(DAGRAD_CUDA "Build the CUDA backend when a CUDA toolkit is found" ON)
set(DAGRAD_WITH_CUDA OFF)
set(DAGRAD_WITH_CUDNN OFF)

if(DAGRAD_CUDA)
  # nvcc is often installed outside PATH (/usr/local/cuda/bin); look there before giving up.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # sm_80 and sm_90 as machine code, plus sm_90 PTX that newer GPUs can JIT. Few targets keep
    # the build within minutes on two cores.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual")
    endif()
    if(NOT CMAKE_CUDA_HOST_COMPILER)
      set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
    endif()
    # One CUDA runtime in the process: the shared libcudart that CUDA::cudart and cuDNN use.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    # CMake before 3.26 knows no CUDA20 dialect for nvcc; nvcc 13 accepts -std=c++20 with g++ 12.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    find_package(CUDAToolkit REQUIRED)
    set(DAGRAD_WITH_CUDA ON)
  else()
    message(STATUS "dagrad: no CUDA compiler found; the CUDA backend is not built")
  endif()
endif()

if(DAGRAD_WITH_CUDA)
  # The .cu files hold kernels and launchers only (no Eigen/xtensor); the .cpp files hold the
  # runtime and the registrations and are compiled by the host compiler.
  file(GLOB DAGRAD_CUDA_SOURCES CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/*.cu
    ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/*.cpp)
  target_sources(dagrad PRIVATE ${DAGRAD_CUDA_SOURCES})
  # The target exists before CUDA is enabled, so its CUDA properties are set here explicitly.
  set_target_properties(dagrad PROPERTIES
    CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}"
    CUDA_STANDARD 20
    CUDA_STANDARD_REQUIRED ON
    CUDA_EXTENSIONS OFF
    CUDA_RUNTIME_LIBRARY Shared)
  target_compile_definitions(dagrad PUBLIC DAGRAD_WITH_CUDA)
  # cuBLAS: MatMul (float32 compute, deterministic with a per-call workspace). PRIVATE: no public
  # header includes a CUDA header; a static libdagrad.a still exports them as $<LINK_ONLY:CUDA::...>,
  # which the installed dagradConfig.cmake resolves through find_dependency(CUDAToolkit).
  target_link_libraries(dagrad PRIVATE CUDA::cudart CUDA::cublas)
  # Device code of a static library is resolved when the final program links; no separable
  # compilation is needed because no kernel calls device code in another file.
  target_compile_options(dagrad PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall>)

  # cuDNN is optional: with it, the conv ops may dispatch to cuDNN when use_cudnn_on_gpu is true.
  # The imported target keeps the build machine's libcudnn path out of the exported targets: the
  # installed package finds cuDNN again with the same module (cmake/dagradConfig.cmake.in).
  option(DAGRAD_CUDNN "Use cuDNN for the conv ops when it is found" ON)
  if(DAGRAD_CUDNN)
    include(dagradFindCudnn)
    dagrad_find_cudnn()
  endif()
  if(DAGRAD_CUDNN AND TARGET dagrad::cudnn)
    set(DAGRAD_WITH_CUDNN ON)
    target_compile_definitions(dagrad PUBLIC DAGRAD_WITH_CUDNN)
    target_link_libraries(dagrad PRIVATE dagrad::cudnn)
  endif()
  message(STATUS "dagrad: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES}, cuDNN ${DAGRAD_WITH_CUDNN})")
  # The GPU conv benchmark (scripts/gpu-check.sh runs it). Part of `all`, so builds without a GPU
  # keep it compiling; it exits at once where no device is present.
  if(DAGRAD_TOP_LEVEL)
    add_executable(dagrad_cuda_conv_bench ${CMAKE_CURRENT_SOURCE_DIR}/bench/cuda_conv_bench.cpp)
    target_link_libraries(dagrad_cuda_conv_bench PRIVATE dagrad::dagrad)
    target_compile_options(dagrad_cuda_conv_bench PRIVATE ${DAGRAD_WARNINGS})
  endif()
endif()
