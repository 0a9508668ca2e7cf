# coolbench_embed_text(OUT_CPP NAMESPACE ns FILES a.md b.md)
# Writes a .cpp that defines `std::string_view ns::<stem>()` for each file, so
# that `--help` prints the very text of docs/cli/<command>.md.
function(coolbench_embed_text out_cpp)
  cmake_parse_arguments(ARG "" "NAMESPACE" "FILES" ${ARGN})
  set(body "// Generated from the files named below by cmake/embed_text.cmake: do not edit.\n#include <string_view>\nnamespace ${ARG_NAMESPACE} {\n")
  foreach(file IN LISTS ARG_FILES)
    file(READ "${file}" text)
    get_filename_component(stem "${file}" NAME_WE)
    string(REPLACE "-" "_" stem "${stem}")
    string(APPEND body "// ${file}\nstd::string_view ${stem}() {\n  static constexpr std::string_view text = R\"coolbench_text(${text})coolbench_text\";\n  return text;\n}\n")
  endforeach()
  string(APPEND body "}  // namespace ${ARG_NAMESPACE}\n")
  # Written through a copy so that an unchanged text does not trigger a rebuild.
  file(WRITE "${out_cpp}.tmp" "${body}")
  configure_file("${out_cpp}.tmp" "${out_cpp}" COPYONLY)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ARG_FILES})
endfunction()
