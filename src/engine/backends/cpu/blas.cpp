#include "engine/backends/cpu/blas.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <string_view>

#include "coolbench/core/error.hpp"

namespace coolbench::engine::cpu {
namespace {

// cblas.h's enumerators, fixed by the CBLAS standard.
constexpr int k_row_major = 101;
constexpr int k_no_trans = 111;
constexpr int k_trans = 112;

using sgemm_fn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                          float, float*, int);
using corename_fn = char* (*)();
using threads_fn = int (*)();

struct loaded {
  void* handle = nullptr;
  sgemm_fn sgemm = nullptr;
  blas_library info;
};

constexpr std::array<const char*, 2> k_names = {"libopenblas.so.0", "libopenblas.so"};

void* open_openblas(std::string& path) {
  for (const char* name : k_names) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      path = name;
      return handle;
    }
  }
  throw error(std::string("the CPU backend needs OpenBLAS and could not load it (") + dlerror() +
              "); install Debian's libopenblas0 (scripts/setup.sh does)");
}

template <class F>
F symbol(void* handle, const char* name) {
  void* address = dlsym(handle, name);
  if (address == nullptr) {
    throw error(std::string("OpenBLAS lacks ") + name + ": is libopenblas.so.0 OpenBLAS?");
  }
  return reinterpret_cast<F>(address);  // NOLINT: dlsym hands out untyped addresses
}

std::string core_of(void* handle) {
  const char* name = symbol<corename_fn>(handle, "openblas_get_corename")();
  return name != nullptr ? name : "";
}

// OpenBLAS's kernel sets older than AVX2, as openblas_get_corename() spells
// them: what its detection falls back to on a CPU model it does not know.
bool is_pre_avx2(std::string_view core) {
  for (const std::string_view old :
       {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Sandybridge"}) {
    if (core == old) return true;
  }
  return false;
}

// The kernel set this CPU can run, or nullptr when it has no AVX2 and FMA.
const char* best_core() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512cd")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

loaded load() {
  loaded l;
  l.handle = open_openblas(l.info.path);
  l.info.core = core_of(l.handle);
  const char* better = best_core();
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr && better != nullptr &&
      is_pre_avx2(l.info.core)) {
    // Unload and load again with the override; if something else in the
    // process keeps OpenBLAS loaded, the second load returns the same
    // instance and its core stays as it was.
    const std::string fallback = l.info.core;
    dlclose(l.handle);
    setenv("OPENBLAS_CORETYPE", better, 0);  // NOLINT(concurrency-mt-unsafe): once, at load
    l.handle = open_openblas(l.info.path);
    l.info.core = core_of(l.handle);
    if (l.info.core != fallback) l.info.corrected = fallback;
  }
  l.sgemm = symbol<sgemm_fn>(l.handle, "cblas_sgemm");
  l.info.threads = symbol<threads_fn>(l.handle, "openblas_get_num_threads")();
  return l;
}

const loaded& library() {
  static const loaded instance = load();
  return instance;
}

}  // namespace

const blas_library& blas() { return library().info; }

void blas_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  library().sgemm(k_row_major, trans_a ? k_trans : k_no_trans, trans_b ? k_trans : k_no_trans, m, n,
                  k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace coolbench::engine::cpu
