# Precompiled headers: xtensor, Eigen, oneTBB, Catch2 and dagrad's own public headers cost 2-6 s
# of parsing in every translation unit, most of a test file's compile time on two cores.
option(DAGRAD_PRECOMPILE_HEADERS "Precompile the heavy headers of each target (faster builds)" ON)

# dagrad_precompile_headers(target header...): precompiles <header>... for the C++ sources of
# `target` (never its CUDA ones: nvcc takes no GCC precompiled header).
function(dagrad_precompile_headers target)
  if(NOT DAGRAD_PRECOMPILE_HEADERS)
    return()
  endif()
  set(headers)
  foreach(header IN LISTS ARGN)
    # $<ANGLE-R>: a plain '>' would end the generator expression early.
    list(APPEND headers "$<$<COMPILE_LANGUAGE:CXX>:<${header}$<ANGLE-R>>")
  endforeach()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()
