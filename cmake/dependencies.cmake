# Finds the third-party libraries. Installed packages (Debian's, through
# scripts/setup.sh) come first; COOLBENCH_DEPS_DIR is the fallback for machines
# without them (the lent GPU machine, which cannot install anything).
find_package(Threads REQUIRED)

function(coolbench_header_only_dep target header)
  find_path(_dir ${header} PATHS "${COOLBENCH_DEPS_DIR}/include" NO_CACHE)
  if(NOT _dir)
    message(FATAL_ERROR "coolbench: ${header} not found. Run scripts/setup.sh "
                        "(installs Debian's packages) or scripts/stage-device-deps.sh.")
  endif()
  add_library(${target} INTERFACE IMPORTED GLOBAL)
  target_include_directories(${target} SYSTEM INTERFACE "${_dir}")
endfunction()

find_package(CLI11 CONFIG QUIET)
if(NOT TARGET CLI11::CLI11)
  coolbench_header_only_dep(CLI11::CLI11 CLI/CLI.hpp)
endif()

find_package(nlohmann_json CONFIG QUIET)
if(NOT TARGET nlohmann_json::nlohmann_json)
  coolbench_header_only_dep(nlohmann_json::nlohmann_json nlohmann/json.hpp)
endif()

# fmt is used header-only so that the binaries need no libfmt at run time.
find_package(fmt CONFIG QUIET)
if(TARGET fmt::fmt-header-only)
  add_library(coolbench_fmt ALIAS fmt::fmt-header-only)
else()
  coolbench_header_only_dep(coolbench_fmt_headers fmt/format.h)
  add_library(coolbench_fmt INTERFACE)
  target_link_libraries(coolbench_fmt INTERFACE coolbench_fmt_headers)
  target_compile_definitions(coolbench_fmt INTERFACE FMT_HEADER_ONLY=1)
endif()

if(COOLBENCH_TESTS)
  find_package(GTest CONFIG QUIET)
  if(NOT TARGET GTest::gtest)
    if(EXISTS "${COOLBENCH_DEPS_DIR}/googletest/CMakeLists.txt")
      set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
      add_subdirectory("${COOLBENCH_DEPS_DIR}/googletest" "${CMAKE_BINARY_DIR}/googletest" EXCLUDE_FROM_ALL)
    else()
      message(FATAL_ERROR "coolbench: GoogleTest not found. Run scripts/setup.sh.")
    endif()
  endif()
endif()

# The engine's libraries. Missing, the engine is left out (as on the lent GPU
# machine), and the log names the Debian package that brings what is missing.
if(COOLBENCH_ENGINE)
  find_package(Protobuf QUIET)
  find_path(ONNX_INCLUDE_DIR onnx/onnx_pb.h)
  find_library(ONNX_PROTO_LIBRARY NAMES onnx_proto onnx)
  if(NOT Protobuf_FOUND)
    message(STATUS "coolbench: building without the ONNX engine (the model command, .onnx "
                   "workloads): no protobuf (Debian: libprotobuf-dev)")
    set(COOLBENCH_ENGINE OFF)
  elseif(NOT ONNX_INCLUDE_DIR OR NOT ONNX_PROTO_LIBRARY)
    message(STATUS "coolbench: building without the ONNX engine (the model command, .onnx "
                   "workloads): no libonnx (Debian: libonnx-dev)")
    set(COOLBENCH_ENGINE OFF)
  endif()
endif()

# The Python module is built for one interpreter: the tests' .venv when it is
# there (scripts/setup.sh makes it from Debian's python3), else the python3
# that CMake finds. pybind11 from Debian's package first, else from that
# interpreter's pip package.
if(COOLBENCH_PYTHON)
  if(NOT DEFINED Python_EXECUTABLE AND EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
    set(Python_EXECUTABLE "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  endif()
  find_package(Python 3.9 COMPONENTS Interpreter Development.Module)
  if(Python_FOUND)
    set(PYBIND11_FINDPYTHON ON)
    find_package(pybind11 2.10 CONFIG QUIET)
    if(NOT pybind11_FOUND)
      execute_process(COMMAND "${Python_EXECUTABLE}" -m pybind11 --cmakedir
                      OUTPUT_VARIABLE _pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                      RESULT_VARIABLE _pybind11_rc ERROR_QUIET)
      if(_pybind11_rc EQUAL 0)
        find_package(pybind11 2.10 CONFIG QUIET PATHS "${_pybind11_dir}" NO_DEFAULT_PATH)
      endif()
    endif()
  endif()
  if(NOT pybind11_FOUND AND SKBUILD)
    message(FATAL_ERROR "coolbench: pip install needs pybind11 and the Python headers "
                        "(Debian: python3-dev; pybind11 comes from pyproject.toml's build requirements)")
  elseif(NOT pybind11_FOUND)
    message(STATUS "coolbench: no pybind11 or no Python headers (scripts/setup.sh installs "
                   "pybind11-dev and python3-dev); building without the Python module")
    set(COOLBENCH_PYTHON OFF)
  else()
    message(STATUS "coolbench: the Python module is for ${Python_EXECUTABLE} (${Python_VERSION})")
  endif()
endif()
