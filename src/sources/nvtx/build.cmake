# NVTX source: needs the NVTX v3 headers (header-only), from the CUDA
# toolkit or a distribution package; no CUDA library and no GPU. Without
# them nvtx.c compiles to nothing and NVTX programs run untraced.
find_path(ACT_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h
  HINTS $ENV{CUDA_HOME}/include $ENV{CUDA_PATH}/include
  PATHS /usr/local/cuda/include /usr/include /opt/cuda/include)
if(ACT_NVTX_INCLUDE_DIR)
  message(STATUS "NVTX source: headers in ${ACT_NVTX_INCLUDE_DIR}")
  target_include_directories(act_objects PRIVATE ${ACT_NVTX_INCLUDE_DIR})
  target_compile_definitions(act_objects PRIVATE ACT_HAVE_NVTX=1)
  set(ACT_HAVE_NVTX ON CACHE INTERNAL "NVTX headers found")
else()
  message(STATUS "NVTX source: nvtx3/nvToolsExt.h not found (set CUDA_HOME); NVTX capture disabled")
  set(ACT_HAVE_NVTX OFF CACHE INTERNAL "NVTX headers found")
endif()
