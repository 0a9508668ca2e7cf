# Installing (README.md, "Installing"): `cmake --install build --prefix P` puts
# the command, libcoolbench.so (SONAME, versioned C symbols), the public headers,
# the CMake package (find_package(coolbench CONFIG): coolbench::c_api,
# coolbench::coolbench) and coolbench.pc under P. Components: runtime (the
# command and the shared library), development (everything else). pip's build
# (SKBUILD) installs only the Python package's files (src/python).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(COOLBENCH_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/coolbench")
get_target_property(COOLBENCH_ABI_VERSION coolbench_shared SOVERSION)

# The configuration, in one line, so that what was left out is plain in any
# build log (pip's included: pip install -v).
set(_parts "command")
if(NOT SKBUILD)
  list(APPEND _parts "libcoolbench.so")
endif()
foreach(_part IN ITEMS ENGINE CUDA PYTHON)
  if(COOLBENCH_${_part})
    list(APPEND _parts "${_part}")
  else()
    list(APPEND _parts "no ${_part}")
  endif()
endforeach()
string(REPLACE ";" ", " _parts "${_parts}")
string(TOLOWER "${_parts}" _parts)
message(STATUS "coolbench ${PROJECT_VERSION}: building ${_parts} (ABI ${COOLBENCH_ABI_VERSION})")

if(NOT SKBUILD)
  install(TARGETS coolbench RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT runtime)

  # coolbench::c_api: libcoolbench.so, the C ABI (include/coolbench/c_api.h).
  set_target_properties(coolbench_shared PROPERTIES EXPORT_NAME c_api)
  target_include_directories(coolbench_shared INTERFACE
    "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>" "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  install(TARGETS coolbench_shared EXPORT coolbench-targets
    LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT runtime NAMELINK_COMPONENT development)

  # coolbench::coolbench: the C++ library of the public headers, the layers'
  # static archives (libcoolbench.so exports only the C ABI).
  set(_layers coolbench_core coolbench_stats coolbench_telemetry coolbench_device coolbench_measure_result
              coolbench_measure)
  if(TARGET coolbench_engine)
    list(APPEND _layers coolbench_engine)
  endif()
  add_library(coolbench_cxx INTERFACE)
  target_link_libraries(coolbench_cxx INTERFACE ${_layers})
  if(TARGET coolbench_engine)
    # The engine links ONNX's protobuf classes privately; installed, by name
    # (-lonnx_proto, libonnx-dev), not by this machine's path to it.
    list(APPEND _layers coolbench_onnx_proto)
    get_target_property(_onnx_links coolbench_onnx_proto INTERFACE_LINK_LIBRARIES)
    list(TRANSFORM _onnx_links REPLACE "^${ONNX_PROTO_LIBRARY}$"
         "$<BUILD_INTERFACE:${ONNX_PROTO_LIBRARY}>$<INSTALL_INTERFACE:onnx_proto>")
    set_target_properties(coolbench_onnx_proto PROPERTIES INTERFACE_LINK_LIBRARIES "${_onnx_links}")
  endif()
  target_include_directories(coolbench_cxx INTERFACE "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_target_properties(coolbench_cxx PROPERTIES EXPORT_NAME coolbench)
  foreach(_layer IN LISTS _layers ITEMS coolbench_warnings)
    string(REPLACE "coolbench_" "" _name "${_layer}")
    set_target_properties(${_layer} PROPERTIES EXPORT_NAME "detail_${_name}")
  endforeach()
  # coolbench_warnings is named by the archives' link interface only (as
  # LINK_ONLY, which carries no compile options to a consumer).
  install(TARGETS coolbench_cxx ${_layers} coolbench_warnings EXPORT coolbench-targets
    ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}/coolbench" COMPONENT development)

  install(DIRECTORY include/coolbench DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT development)
  install(EXPORT coolbench-targets NAMESPACE coolbench:: DESTINATION "${COOLBENCH_CMAKE_DIR}"
          COMPONENT development)

  # Before 1.0 a minor version may break compatibility (as for the SONAME).
  if(PROJECT_VERSION_MAJOR EQUAL 0)
    set(_compatibility SameMinorVersion)
  else()
    set(_compatibility SameMajorVersion)
  endif()
  configure_package_config_file(cmake/coolbenchConfig.cmake.in
    "${PROJECT_BINARY_DIR}/coolbenchConfig.cmake" INSTALL_DESTINATION "${COOLBENCH_CMAKE_DIR}")
  write_basic_package_version_file("${PROJECT_BINARY_DIR}/coolbenchConfigVersion.cmake"
    COMPATIBILITY ${_compatibility})
  install(FILES "${PROJECT_BINARY_DIR}/coolbenchConfig.cmake" "${PROJECT_BINARY_DIR}/coolbenchConfigVersion.cmake"
          DESTINATION "${COOLBENCH_CMAKE_DIR}" COMPONENT development)

  # pkg-config: the C ABI (libcoolbench.so), with paths relative to the .pc file's prefix.
  file(RELATIVE_PATH COOLBENCH_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" COOLBENCH_PC_TO_PREFIX "${COOLBENCH_PC_TO_PREFIX}")
  configure_file(cmake/coolbench.pc.in "${PROJECT_BINARY_DIR}/coolbench.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/coolbench.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
          COMPONENT development)
endif()
