# CUPTI source: compiled into libacceltrace only where the CUDA toolkit's
# cupti.h is found (record layouts come from it). Elsewhere cupti_none.c
# answers ACT_E_UNSUPPORTED with one clear message.
find_path(ACT_CUPTI_INCLUDE_DIR cupti.h
  HINTS $ENV{CUDA_HOME}/include /usr/local/cuda/include
  NO_DEFAULT_PATH)
if(ACT_CUPTI_INCLUDE_DIR)
  message(STATUS "acceltrace: CUPTI source enabled (${ACT_CUPTI_INCLUDE_DIR}/cupti.h)")
  target_sources(act_objects PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cupti.c)
  # Per file, as a system path: the toolkit also ships CL/ headers that
  # must not shadow the OpenCL ones for the rest of the library.
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/cupti.c PROPERTIES
    COMPILE_OPTIONS "-isystem;${ACT_CUPTI_INCLUDE_DIR}")
else()
  message(STATUS "acceltrace: cupti.h not found (set CUDA_HOME); CUPTI source skipped")
  target_sources(act_objects PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cupti_none.c)
endif()
