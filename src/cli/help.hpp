// Help texts, generated from docs/cli/*.md at build time (cmake/embed_text.cmake),
// so `--help` and the documentation cannot drift apart.
#pragma once

#include <string_view>

namespace coolbench::cli::help {

std::string_view coolbench();
std::string_view info();
std::string_view monitor();
std::string_view who();
std::string_view wait_cool();
std::string_view model();
std::string_view release_check();
std::string_view heat();
std::string_view hidden_state();
std::string_view run();
std::string_view report();
std::string_view compare();
std::string_view exec();
std::string_view nodes();

}  // namespace coolbench::cli::help
