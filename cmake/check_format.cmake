# Fails when clang-format would change any C++ or CUDA file of the project.
file(GLOB_RECURSE files
  "${ROOT}/include/*.hpp" "${ROOT}/src/*.hpp" "${ROOT}/src/*.cpp" "${ROOT}/src/*.cu" "${ROOT}/src/*.cuh"
  "${ROOT}/tests/*.hpp" "${ROOT}/tests/*.cpp" "${ROOT}/tests/*.cu" "${ROOT}/bench/*.cpp" "${ROOT}/bench/*.cu")
execute_process(COMMAND "${CLANG_FORMAT}" --dry-run --Werror ${files}
  RESULT_VARIABLE result ERROR_VARIABLE out)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "clang-format would change these files (run scripts/format.sh):\n${out}")
endif()
