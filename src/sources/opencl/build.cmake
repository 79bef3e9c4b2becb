# build.cmake -- the OpenCL source's extra build piece: the LD_PRELOAD shim
# libacceltrace_preload.so. It is a separate library because exporting the
# cl* entry points from libacceltrace.so would interpose on any program
# linking both. The shim only forwards; the wrappers are in libacceltrace.
add_library(acceltrace_preload SHARED ${CMAKE_CURRENT_LIST_DIR}/preload/preload.c)
target_include_directories(acceltrace_preload PRIVATE
  ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/src/core)
target_compile_definitions(acceltrace_preload PRIVATE CL_TARGET_OPENCL_VERSION=300)
target_compile_options(acceltrace_preload PRIVATE -fvisibility=hidden)
target_link_libraries(acceltrace_preload PRIVATE acceltrace ${CMAKE_DL_LIBS})
set_target_properties(acceltrace_preload PROPERTIES
  INSTALL_RPATH "$ORIGIN" BUILD_RPATH "${CMAKE_BINARY_DIR}/lib")
install(TARGETS acceltrace_preload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
