# trace_tests.cmake -- end-to-end tests: `acceltrace run` on the example and
# the purpose-written programs, the Chrome trace validated by
# validate_trace.py. Included by CMakeLists.txt once the writer exists.
set(ACT_IT_TRACE ${CMAKE_CURRENT_SOURCE_DIR}/run_trace_test.py)

function(act_it_trace name prog)
  add_test(NAME trace.${name}
    COMMAND ${Python3_EXECUTABLE} ${ACT_IT_TRACE} --acceltrace $<TARGET_FILE:act_cli> ${ARGN})
  set_tests_properties(trace.${name} PROPERTIES TIMEOUT 120 LABELS "integration;opencl")
endfunction()

act_it_trace(vecops vecops --kernels 54 --names saxpy,scale,reduce,busy
  -- $<TARGET_FILE:vecops>)
act_it_trace(null_events it_null_events --kernels 25 -- $<TARGET_FILE:it_null_events> 25)
act_it_trace(release_events it_release_events --kernels 16 --names inc,twice
  -- $<TARGET_FILE:it_release_events>)
act_it_trace(dlopen it_dlopen_cl --kernels 5 -- $<TARGET_FILE:it_dlopen_cl>)
act_it_trace(coverage it_coverage --kernels 1 -- $<TARGET_FILE:it_coverage>)
act_it_trace(exit3 it_exit3 --exit 3 --kernels 3 -- $<TARGET_FILE:it_exit3>)
act_it_trace(segv it_segv --exit 139 -- $<TARGET_FILE:it_segv>)
set_tests_properties(trace.segv PROPERTIES LABELS "integration;opencl;nosan")
act_it_trace(preload_vecops vecops --preload --kernels 54 -- $<TARGET_FILE:vecops>)
# Under ASan the shim would be preloaded ahead of the ASan runtime, which
# ASan refuses; the spool.preload.* tests cover the shim in that build.
set_tests_properties(trace.preload_vecops PROPERTIES LABELS "integration;opencl;nosan")
# -o NAME.gz writes a gzip stream (compressed on the writer's thread).
act_it_trace(gzip_vecops vecops --gzip --kernels 54 --names saxpy,scale,reduce,busy
  -- $<TARGET_FILE:vecops>)

# Issue 16: errors, leaks, device memory, builds, launch args, images,
# SVM, markers and barriers, cl_khr_command_buffer -- each in the trace
# and both summaries.
foreach(mode fail clean cmdbuf)
  add_test(NAME trace.cl_depth_${mode}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_cl_depth.py
      --acceltrace $<TARGET_FILE:act_cli> --program $<TARGET_FILE:it_cl_depth> ${mode})
  set_tests_properties(trace.cl_depth_${mode} PROPERTIES TIMEOUT 180 LABELS "integration;opencl")
endforeach()

# Issue 21: scripts/cts-compare.py, the by-hand OpenCL-CTS comparison
# (docs/reliability.md), reads CTS output right and can fail.
add_test(NAME trace.cts_compare
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_cts_compare.py
          $<TARGET_FILE:act_cli> $<TARGET_FILE:it_release_events> $<TARGET_FILE:it_segv>)
set_tests_properties(trace.cts_compare PROPERTIES TIMEOUT 120 LABELS "integration;opencl;nosan")

# Issue 30.6: device times are the program's own reads moved by the one
# offset the trace states, for every clock mapping method (forced with
# ACCELTRACE_OPENCL_CLOCK); an in-order queue never overlaps. PoCL lacks
# the timer API: a layer under the preload shim gives it (nosan: the
# shim is preloaded).
foreach(method auto device_host_timer monotonic_raw anchor_marker anchor_enqueue)
  add_test(NAME trace.clock_truth_${method}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_clock_truth.py
      $<TARGET_FILE:act_cli> $<TARGET_FILE:it_clock_truth> ${method}
      $<TARGET_FILE:it_host_timer_layer>)
  set_tests_properties(trace.clock_truth_${method} PROPERTIES TIMEOUT 120
    LABELS "integration;opencl")
endforeach()
set_tests_properties(trace.clock_truth_device_host_timer PROPERTIES
  LABELS "integration;opencl;nosan")
