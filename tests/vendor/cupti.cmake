# CUPTI fakes and tests: only when the CUPTI source is built (cupti.h found,
# see src/sources/cupti/build.cmake). The fake is compiled against the real
# cupti.h so its records have the toolkit's exact layouts.
if(ACT_CUPTI_INCLUDE_DIR)
  act_fake_library(fake_cupti cupti cupti fake_cupti.c)
  act_fake_library(fake_cupti_nosym cupti cupti_nosym fake_cupti.c)
  target_compile_options(fake_cupti PRIVATE -isystem ${ACT_CUPTI_INCLUDE_DIR})
  target_compile_options(fake_cupti_nosym PRIVATE -isystem ${ACT_CUPTI_INCLUDE_DIR})
  target_compile_definitions(fake_cupti_nosym PRIVATE FAKE_CUPTI_OMIT_FLUSH)
  target_link_libraries(fake_cupti PRIVATE ${CMAKE_DL_LIBS})
  target_link_libraries(fake_cupti_nosym PRIVATE ${CMAKE_DL_LIBS})

  add_executable(test_cupti test_cupti.c)
  target_include_directories(test_cupti PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/src/core)
  target_compile_options(test_cupti PRIVATE -isystem ${ACT_CUPTI_INCLUDE_DIR})
  target_link_libraries(test_cupti PRIVATE acceltrace_static act_spool_scan ${CMAKE_DL_LIBS})
  add_dependencies(test_cupti fake_cupti fake_cupti_nosym)

  set(CUPTI_CASES kinds kinds_no_callbacks link drain vendor_dropped conflict version_mismatch cycles)
  foreach(c ${CUPTI_CASES})
    add_test(NAME vendor.cupti.${c} COMMAND test_cupti ${c})
    set_tests_properties(vendor.cupti.${c} PROPERTIES TIMEOUT 60 LABELS "vendor;concurrency"
      ENVIRONMENT "ACCELTRACE_CUPTI_LIB=${ACT_FAKE_DIR}/cupti/libcupti.so")
  endforeach()
  add_test(NAME vendor.cupti.missing_library COMMAND test_cupti missing_library)
  set_tests_properties(vendor.cupti.missing_library PROPERTIES TIMEOUT 60 LABELS vendor
    ENVIRONMENT "ACCELTRACE_CUPTI_LIB=${ACT_FAKE_DIR}/does-not-exist/libcupti.so")
  add_test(NAME vendor.cupti.missing_symbol COMMAND test_cupti missing_symbol)
  set_tests_properties(vendor.cupti.missing_symbol PROPERTIES TIMEOUT 60 LABELS vendor
    ENVIRONMENT "ACCELTRACE_CUPTI_LIB=${ACT_FAKE_DIR}/cupti_nosym/libcupti.so")

  add_test(NAME vendor.cupti.trace COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_vendor_trace.py
    $<TARGET_FILE:test_cupti> 1000)
  set_tests_properties(vendor.cupti.trace PROPERTIES TIMEOUT 120 LABELS "vendor;concurrency" SKIP_RETURN_CODE 77
    ENVIRONMENT "ACCELTRACE_CUPTI_LIB=${ACT_FAKE_DIR}/cupti/libcupti.so")

  # The toolkit's own libcupti, where installed (no GPU needed: without
  # one it must refuse cleanly).
  find_library(ACT_REAL_CUPTI NAMES cupti PATHS ${ACT_CUPTI_INCLUDE_DIR}/../lib64 ${ACT_CUPTI_INCLUDE_DIR}/../lib
    NO_DEFAULT_PATH)
  if(ACT_REAL_CUPTI)
    add_test(NAME vendor.cupti.real_library COMMAND test_cupti real_library)
    set_tests_properties(vendor.cupti.real_library PROPERTIES TIMEOUT 120 LABELS vendor
      ENVIRONMENT "ACCELTRACE_CUPTI_LIB=${ACT_REAL_CUPTI}")
  endif()

  # Injection: an unmodified program, CUDA_INJECTION64_PATH=libacceltrace.so.
  add_executable(act_inject_app inject_app.c)
  target_link_libraries(act_inject_app PRIVATE ${CMAKE_DL_LIBS})
  add_executable(test_cupti_inject test_cupti_inject.c)
  target_link_libraries(test_cupti_inject PRIVATE act_spool_scan)
  add_dependencies(test_cupti_inject act_inject_app acceltrace fake_cupti)
  add_test(NAME vendor.cupti.injection COMMAND test_cupti_inject $<TARGET_FILE:act_inject_app>
    $<TARGET_FILE:acceltrace> ${ACT_FAKE_DIR}/cupti/libcupti.so)
  set_tests_properties(vendor.cupti.injection PROPERTIES TIMEOUT 60 LABELS "vendor;nosan")

  # `acceltrace run --cuda`: the launcher alone gets CUPTI started in the
  # same unmodified program (the fake cuInit loads CUDA_INJECTION64_PATH).
  add_test(NAME vendor.cupti.run COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_run_vendor.py
    $<TARGET_FILE:act_cli> $<TARGET_FILE:act_inject_app> cuda ${CMAKE_CURRENT_BINARY_DIR}/work 10
    $<TARGET_FILE:acceltrace>)
  set_tests_properties(vendor.cupti.run PROPERTIES TIMEOUT 60 LABELS "vendor;integration;nosan"
    ENVIRONMENT "ACCELTRACE_CUPTI_LIB=${ACT_FAKE_DIR}/cupti/libcupti.so;FAKE_CUDA_LIB=${ACT_FAKE_DIR}/cupti/libcupti.so")
endif()
