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

# The enqueue-overhead benchmark (bench/opencl_enqueue.c). Built from here
# until bench/CMakeLists.txt exists on main; it re-executes itself under
# the layer and the shim, so it needs both libraries built. Not a test:
# run it by hand or from the bench driver (add it there when merging).
if(ACT_BUILD_BENCH AND EXISTS ${CMAKE_SOURCE_DIR}/bench/opencl_enqueue.c)
  add_executable(act_bench_opencl_enqueue ${CMAKE_SOURCE_DIR}/bench/opencl_enqueue.c)
  target_compile_definitions(act_bench_opencl_enqueue PRIVATE CL_TARGET_OPENCL_VERSION=300)
  target_link_libraries(act_bench_opencl_enqueue PRIVATE OpenCL::OpenCL m)
  add_dependencies(act_bench_opencl_enqueue acceltrace acceltrace_preload)
endif()
