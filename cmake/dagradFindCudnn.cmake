# Finds cuDNN beside the CUDA toolkit as the imported target dagrad::cudnn; shared by the build
# and the installed package, so a consumer links its own machine's cuDNN, never the build's path.
#
# dagrad_find_cudnn() needs find_package(CUDAToolkit) first (its directories are the hints). Set
# CUDNN_ROOT, or DAGRAD_CUDNN_LIBRARY and DAGRAD_CUDNN_INCLUDE_DIR, where cuDNN lives elsewhere.
# A parent project using dagrad through add_subdirectory needs no GLOBAL target: CMake resolves
# libdagrad.a's $<LINK_ONLY:dagrad::cudnn> in dagrad's own directory.
function(dagrad_find_cudnn)
  if(TARGET dagrad::cudnn)
    return()
  endif()
  find_path(DAGRAD_CUDNN_INCLUDE_DIR cudnn.h
    HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
    PATH_SUFFIXES include)
  find_library(DAGRAD_CUDNN_LIBRARY cudnn
    HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
    PATH_SUFFIXES lib64 lib)
  if(NOT DAGRAD_CUDNN_INCLUDE_DIR OR NOT DAGRAD_CUDNN_LIBRARY)
    return()
  endif()
  add_library(dagrad::cudnn UNKNOWN IMPORTED)
  set_target_properties(dagrad::cudnn PROPERTIES
    IMPORTED_LOCATION "${DAGRAD_CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${DAGRAD_CUDNN_INCLUDE_DIR}")
endfunction()
