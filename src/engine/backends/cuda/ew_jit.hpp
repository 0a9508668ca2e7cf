// Elementwise programs compiled to straight-line kernels at run time (NVRTC).
//
// The interpreting kernel (fused_elementwise.cu) decodes every instruction
// for every element and keeps its registers in local memory: on an H100 it
// took 138 µs a launch for BERT's GELU over 32 x 128 x 3072 fp16 elements,
// where the bytes need 17 µs (engine.md, "2026-12-06 evening"). A program
// here becomes C++ source with one local variable per result, the op of
// each instruction fixed (ew_apply from elementwise_ops.hpp, the same text
// the other kernels compile), the operands' dtypes and the layout's rank
// known; NVRTC compiles it for the device's architecture, the CUDA runtime
// loads it as a context-independent library, and each distinct source is
// compiled once per process.
//
// NVRTC is opened at run time (libnvrtc.so.<CUDA major>), so the engine
// starts where it is missing and runs the interpreter there. The generated
// kernels are on unless COOLBENCH_EW_JIT=0 (which keeps the interpreter,
// for comparisons).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coolbench/engine/tensor.hpp"
#include "engine/backends/cuda/kernels.hpp"
#include "engine/fusion/elementwise_program.hpp"

namespace coolbench::engine::cuda {

/// A generated kernel's parameters, as the source declares them (the same
/// member types and order; checked by sizeof in ew_jit.cpp).
struct ew_jit_params {
  const void* data[k_ew_max_inputs];
  long long stride[k_ew_max_inputs][k_max_rank];
  long long shape[k_max_rank];
  long long count;
  void* out;
  int rank;
};

/// What fixes a generated kernel besides the program: its operands' dtypes,
/// the output's, and the iteration space's kind (ew_layout in
/// launch_shapes.hpp: dense, narrow, rank).
struct ew_jit_signature {
  std::vector<dtype> inputs;
  dtype out = dtype::float32;
  int rank = 1;
  bool dense = true;
  bool narrow = true;
  /// Dense only: elements a thread takes at once (1, 2, 4, 8 or 16), each
  /// operand read and the output written as one aligned access of up to 16
  /// bytes (ew_jit_vector chooses it); `scalar` marks the inputs of stride
  /// 0 (bit k: input k), read once.
  int vector = 1;
  unsigned scalar = 0;
};

/// The widest `vector` a dense launch can take: up to 16 bytes of the
/// widest element a thread, halved until the count divides by it and every
/// pointer of a non-scalar operand (and `out`) is aligned to its access.
[[nodiscard]] int ew_jit_vector(const ew_jit_signature& signature, const void* const* data,
                                const void* out, std::int64_t count);

/// The kernel's name in every generated source.
inline constexpr const char* k_ew_jit_kernel = "coolbench_ew";

/// CUDA C++ of the program as one kernel `coolbench_ew(ew_jit_params)`, a
/// grid-stride loop over the output's elements. Throws invalid_argument for
/// a program that reads a register no instruction wrote or an input it does
/// not have.
[[nodiscard]] std::string ew_jit_source(const ew_program& program,
                                        const ew_jit_signature& signature);

/// The text of elementwise_ops.hpp, as the generated sources include it.
[[nodiscard]] const char* ew_ops_header_text() noexcept;

/// NVRTC's answer for one source.
struct ew_compiled {
  std::vector<char> cubin;  // empty when the compile failed
  std::string log;          // NVRTC's log, or why NVRTC could not be used
};

/// Compiles a generated source for sm_<arch> (90 for an H100) through
/// NVRTC, opened at run time. Needs no GPU.
[[nodiscard]] ew_compiled ew_jit_compile(const std::string& source, int arch);

/// Whether the generated kernels are on: unless COOLBENCH_EW_JIT=0.
[[nodiscard]] bool ew_jit_enabled() noexcept;

/// The loaded kernel (a cudaKernel_t) for this program on the current
/// device, compiled and loaded on first use outside a capture of `stream`,
/// or nullptr when the generated kernels are off or this one could not be
/// made yet; then `why` (when given) says why ("COOLBENCH_EW_JIT=0",
/// NVRTC's error), and a failure is also kept for ew_jit_last_failure.
/// Thread-safe.
[[nodiscard]] void* ew_jit_kernel(const ew_program& program, const ew_jit_signature& signature,
                                  void* stream, std::string* why = nullptr);

/// Stops using `kernel` (its launch failed: `why`); its programs run
/// interpreted from then on.
void ew_jit_drop(void* kernel, const std::string& why);

/// Why the last kernel could not be made ("" when none failed).
[[nodiscard]] std::string ew_jit_last_failure();

}  // namespace coolbench::engine::cuda
