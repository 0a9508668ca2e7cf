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
