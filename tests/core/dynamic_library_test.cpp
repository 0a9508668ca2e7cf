#include "core/dynamic_library.hpp"

#include <gtest/gtest.h>

#include "coolbench/core/error.hpp"

namespace coolbench::core {
namespace {

TEST(dynamic_library, a_missing_library_names_every_file_tried_and_the_hint) {
  try {
    dynamic_library lib({"libcoolbench-absent-1.so", "libcoolbench-absent-2.so"}, "Install it.");
    FAIL() << "loaded a library that does not exist";
  } catch (const not_available& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("libcoolbench-absent-1.so"), std::string::npos) << message;
    EXPECT_NE(message.find("libcoolbench-absent-2.so"), std::string::npos) << message;
    EXPECT_NE(message.find("Install it."), std::string::npos) << message;
  }
}

TEST(dynamic_library, falls_back_to_the_next_name_and_finds_symbols) {
  // The C library is present on every machine the tests run on.
  dynamic_library lib({"libcoolbench-absent.so", "libc.so.6"}, "");
  EXPECT_EQ(lib.name(), "libc.so.6");
  EXPECT_NE(lib.find("strlen"), nullptr);
  EXPECT_EQ(lib.find("coolbench_no_such_symbol"), nullptr);
  EXPECT_EQ(lib.find_first({"coolbench_no_such_symbol", "strlen"}), lib.find("strlen"));
  dynamic_library moved(std::move(lib));
  EXPECT_NE(moved.find("strlen"), nullptr);
}

}  // namespace
}  // namespace coolbench::core
