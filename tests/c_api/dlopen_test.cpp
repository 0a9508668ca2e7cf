// libcoolbench.so as a foreign program sees it: loaded with dlopen by a program that does not link
// coolbench, the release found by its registered name, only the C API exported. Passes with a GPU
// and without one (then the release says there is no GPU or driver).
#include <gtest/gtest.h>

#include <elf.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "c_api/loaded_coolbench.hpp"

namespace {

using coolbench::testing::loaded_coolbench;
using nlohmann::json;

const loaded_coolbench& library() {
  static const loaded_coolbench loaded(COOLBENCH_SHARED_PATH);
  return loaded;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

TEST(c_api_dlopen_test, exports_the_c_api) {
  for (const char* name :
       {"coolbench_release_device", "coolbench_device_state", "coolbench_last_error",
        "coolbench_version", "coolbench_find_function", "coolbench_function_signature"}) {
    EXPECT_NE(library().symbol(name), nullptr) << name;
  }
  EXPECT_STREQ(library().version(), COOLBENCH_EXPECTED_VERSION);
}

// The names of the symbols the library defines in its dynamic symbol table (`nm -D
// --defined-only`).
std::vector<std::string> exported_symbols(const char* path) {
  std::ifstream file(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)),
                                std::istreambuf_iterator<char>());
  const auto read = [&](auto& out, std::size_t offset) {
    if (offset + sizeof out > bytes.size()) throw std::runtime_error("truncated ELF file");
    std::memcpy(&out, bytes.data() + offset, sizeof out);
  };
  Elf64_Ehdr header{};
  read(header, 0);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
    throw std::runtime_error("not a 64-bit ELF file");
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section{};
    read(section, header.e_shoff + i * header.e_shentsize);
    if (section.sh_type != SHT_DYNSYM) continue;
    Elf64_Shdr strings{};
    read(strings, header.e_shoff + section.sh_link * header.e_shentsize);
    for (std::size_t offset = 0; offset + sizeof(Elf64_Sym) <= section.sh_size;
         offset += sizeof(Elf64_Sym)) {
      Elf64_Sym symbol{};
      read(symbol, section.sh_offset + offset);
      if (symbol.st_shndx == SHN_UNDEF || symbol.st_name == 0) continue;
      names.emplace_back(bytes.data() + strings.sh_offset + symbol.st_name);
    }
  }
  return names;
}

TEST(c_api_dlopen_test, exports_nothing_but_the_c_api) {
  const auto names = exported_symbols(COOLBENCH_SHARED_PATH);
  // The six functions, and the name of the version node they are in.
  EXPECT_EQ(names.size(), 7U);
  for (const auto& name : names) {
    EXPECT_TRUE(name.rfind("coolbench_", 0) == 0 || name == "COOLBENCH_" COOLBENCH_ABI_VERSION)
        << name;
  }
}

TEST(c_api_dlopen_test, hides_everything_else) {
  // C++ symbols of the layers, the static CUDA runtime inside, and the C API's own helpers.
  for (const char* name :
       {"_ZN9coolbench6device6device3getEi", "_ZN9coolbench7versionEv",
        "_ZN9coolbench13find_functionESt17basic_string_viewIcSt11char_traitsIcEE",
        "cudaDeviceReset", "cudaGetDeviceCount"}) {
    EXPECT_EQ(library().symbol(name), nullptr) << name << " is exported";
  }
}

TEST(c_api_dlopen_test, cuda_reset_by_name_is_the_release) {
  void* found = library().find_function("device_api.cuda_reset");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found, library().symbol("coolbench_release_device"));
  EXPECT_STREQ(library().function_signature("device_api.cuda_reset"),
               "int(int,unsigned,char*,size_t)");
  EXPECT_EQ(library().find_function("device_api.no_such_function"), nullptr);

  using release_type = int (*)(int, unsigned, char*, std::size_t);
  auto* cuda_reset = reinterpret_cast<release_type>(found);  // NOLINT
  char report[4096];
  const int code = cuda_reset(0, 0, report, sizeof report);
  const json parsed = json::parse(report);
  if (code == COOLBENCH_NO_DEVICE) {  // CI: no GPU, no driver
    const std::string message = lower(library().last_error());
    EXPECT_TRUE(message.find("gpu") != std::string::npos ||
                message.find("driver") != std::string::npos)
        << message;
    EXPECT_EQ(parsed["released"], false);
    EXPECT_EQ(parsed["error"], library().last_error());
    std::printf("no GPU here: %s\n", library().last_error());
  } else {  // a GPU machine: this process has no context, or had one and it is gone now
    ASSERT_TRUE(code == COOLBENCH_OK || code == COOLBENCH_NOTHING_TO_RELEASE)
        << code << ": " << library().last_error();
    EXPECT_EQ(parsed["released"], code == COOLBENCH_OK);
    EXPECT_EQ(parsed["ordinal"], 0);
    char state[1024];
    EXPECT_EQ(library().device_state(0, state, sizeof state), COOLBENCH_OK);
    EXPECT_EQ(json::parse(state)["context_active"], false);
  }
}

TEST(c_api_dlopen_test, bad_arguments_through_the_library) {
  char report[512];
  EXPECT_EQ(library().release_device(0, 0x100, report, sizeof report), COOLBENCH_INVALID_ARGUMENT);
  EXPECT_NE(std::string(library().last_error()).find("unknown flag bits"), std::string::npos);
  EXPECT_EQ(library().release_device(0, 0, nullptr, 1), COOLBENCH_INVALID_ARGUMENT);
  EXPECT_EQ(library().release_device(1 << 20, 0, report, sizeof report), COOLBENCH_NO_DEVICE);
}

}  // namespace
