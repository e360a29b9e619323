# dagrad.pc for programs built without CMake, installed to <libdir>/pkgconfig. A static
# libdagrad.a needs its private dependencies at link time, so they go to Requires/Libs there and
# to the .private fields for a shared library. CUDA has no pkg-config module on Debian: its
# libraries are named with the build's toolkit directory.
set(DAGRAD_PC_REQUIRES "xtensor eigen3 tbb")
set(DAGRAD_PC_PRIVATE_REQUIRES "zlib")
set(DAGRAD_PC_PRIVATE_LIBS "-pthread")
set(DAGRAD_PC_CFLAGS "")
if(DAGRAD_WITH_CUDA)
  string(APPEND DAGRAD_PC_CFLAGS " -DDAGRAD_WITH_CUDA")
  string(APPEND DAGRAD_PC_PRIVATE_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -lcublas")
endif()
if(DAGRAD_WITH_CUDNN)
  string(APPEND DAGRAD_PC_CFLAGS " -DDAGRAD_WITH_CUDNN")
  string(APPEND DAGRAD_PC_PRIVATE_LIBS " ${DAGRAD_CUDNN_LIBRARY}")
endif()
if(BUILD_SHARED_LIBS)
  set(DAGRAD_PC_REQUIRES_PRIVATE "${DAGRAD_PC_PRIVATE_REQUIRES}")
  set(DAGRAD_PC_LIBS "")
  set(DAGRAD_PC_LIBS_PRIVATE "${DAGRAD_PC_PRIVATE_LIBS}")
else()
  string(APPEND DAGRAD_PC_REQUIRES " ${DAGRAD_PC_PRIVATE_REQUIRES}")
  set(DAGRAD_PC_REQUIRES_PRIVATE "")
  set(DAGRAD_PC_LIBS " ${DAGRAD_PC_PRIVATE_LIBS}")
  set(DAGRAD_PC_LIBS_PRIVATE "")
endif()
# The install prefix is known only at install time (cmake --install --prefix): the file is
# written then, from the template configured here.
set(DAGRAD_PC_PREFIX "@DAGRAD_PC_INSTALL_PREFIX@")
configure_file(${CMAKE_CURRENT_LIST_DIR}/dagrad.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dagrad.pc.configured @ONLY)
install(CODE "
  set(DAGRAD_PC_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${CMAKE_CURRENT_BINARY_DIR}/dagrad.pc.configured\" \"${CMAKE_CURRENT_BINARY_DIR}/dagrad.pc\" @ONLY)
")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dagrad.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
