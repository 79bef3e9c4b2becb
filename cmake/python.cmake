# python.cmake -- installs the Python package (python/acceltrace, the one
# source of it) beside the library, with _build_info.py saying where the
# library and the command are relative to the package and which version
# this is. Two layouts:
#
#   wheel (SKBUILD, scikit-build-core):  <site-packages>/acceltrace/{bin,lib,include}
#   system install:  P/bin, P/lib, P/include, P/lib/python3/dist-packages/acceltrace
#
# In a wheel the library's one dependency outside Debian's base system,
# libjansson, goes beside it (found through libacceltrace's RUNPATH $ORIGIN),
# with its licence, so the wheel needs only libc and, for OpenCL programs,
# the OpenCL ICD loader the traced program brings. ISA-L (gzip output,
# loaded at run time) goes beside it too.
option(ACT_INSTALL_PYTHON "Install the Python package with the library" ON)
if(SKBUILD)
  set(_act_pydir_default ".")
else()
  set(_act_pydir_default "lib/python3/dist-packages")
endif()
set(ACT_PYTHON_INSTALL_DIR "${_act_pydir_default}" CACHE STRING
    "Where the Python package goes, relative to the install prefix (on Debian, lib/python3/dist-packages is on python3's path for the prefix /usr)")

if(ACT_INSTALL_PYTHON)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/acceltrace
          DESTINATION ${ACT_PYTHON_INSTALL_DIR}
          FILES_MATCHING PATTERN "*.py"
          PATTERN "__pycache__" EXCLUDE PATTERN "_origin.py" EXCLUDE PATTERN "_build_info.py" EXCLUDE)
  file(RELATIVE_PATH ACT_PKG_TO_LIB /p/${ACT_PYTHON_INSTALL_DIR}/acceltrace /p/${CMAKE_INSTALL_LIBDIR})
  file(RELATIVE_PATH ACT_PKG_TO_BIN /p/${ACT_PYTHON_INSTALL_DIR}/acceltrace /p/${CMAKE_INSTALL_BINDIR})
  configure_file(${CMAKE_SOURCE_DIR}/cmake/_build_info.py.in
                 ${CMAKE_BINARY_DIR}/python/_build_info.py @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/python/_build_info.py
          DESTINATION ${ACT_PYTHON_INSTALL_DIR}/acceltrace)
  # The torch plugin's sources, for a plugin built on first import for a
  # torch no prebuilt one matches (python/acceltrace/torch/_build.py): the
  # .cpp and the headers of ours it includes (the public ones go to include/).
  install(FILES ${CMAKE_SOURCE_DIR}/plugins/torch/acceltrace_torch.cpp
          DESTINATION ${ACT_PYTHON_INSTALL_DIR}/acceltrace/torch/_src)
  foreach(_h core/record.h timeline/snapshot.h writers/sanitize.h)
    get_filename_component(_d ${_h} DIRECTORY)
    install(FILES ${CMAKE_SOURCE_DIR}/src/${_h}
            DESTINATION ${ACT_PYTHON_INSTALL_DIR}/acceltrace/torch/_src/${_d})
  endforeach()
endif()

if(SKBUILD)
  find_library(ACT_JANSSON_SO NAMES libjansson.so.4 jansson HINTS ${JANSSON_LIBRARY_DIRS} REQUIRED)
  file(REAL_PATH "${ACT_JANSSON_SO}" _act_jansson_real)
  install(FILES "${_act_jansson_real}" DESTINATION ${CMAKE_INSTALL_LIBDIR} RENAME libjansson.so.4)
  foreach(_c /usr/share/doc/libjansson4/copyright ${JANSSON_PREFIX}/share/doc/jansson/LICENSE)
    if(EXISTS "${_c}")
      install(FILES "${_c}" DESTINATION ${CMAKE_INSTALL_LIBDIR} RENAME libjansson.LICENSE)
      break()
    endif()
  endforeach()
  # ISA-L, which writes gzip traces (src/writers/gz.h): not NEEDED, dlopen'ed
  # by libacceltrace when the first gzip trace is written, found through the
  # same RUNPATH; it needs only libc.
  if(ISAL_FOUND)
    find_library(ACT_ISAL_SO NAMES libisal.so.2 isal HINTS ${ISAL_LIBRARY_DIRS} REQUIRED)
    file(REAL_PATH "${ACT_ISAL_SO}" _act_isal_real)
    install(FILES "${_act_isal_real}" DESTINATION ${CMAKE_INSTALL_LIBDIR} RENAME libisal.so.2)
    foreach(_c /usr/share/doc/libisal2/copyright ${ISAL_PREFIX}/share/doc/isa-l/LICENSE)
      if(EXISTS "${_c}")
        install(FILES "${_c}" DESTINATION ${CMAKE_INSTALL_LIBDIR} RENAME libisal.LICENSE)
        break()
      endif()
    endforeach()
  endif()
endif()
