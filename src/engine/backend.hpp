// What a session asks of a backend. The CPU backend is the reference; the
// CUDA backend (Engine II) will implement the same few methods. The engine
// core never includes a backend's own headers.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine {

class backend {
 public:
  virtual ~backend() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// The name and what it runs on, for reports: "cpu (OpenBLAS Haswell, 2 threads)".
  [[nodiscard]] virtual std::string describe() const = 0;
  /// Whether run() accepts this node (its op type, domain and attributes).
  [[nodiscard]] virtual bool supports(const node& n) const = 0;
  /// Computes one node; sizes and fills `outputs`.
  virtual void run(const node& n, std::span<const tensor* const> inputs,
                   std::span<tensor> outputs) = 0;
};

/// "cpu"; throws invalid_argument naming the backends there are.
[[nodiscard]] std::unique_ptr<backend> make_backend(std::string_view name);

}  // namespace coolbench::engine
