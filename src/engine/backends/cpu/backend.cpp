// The CPU reference backend: the op-type table over the kernel families,
// with supports() beside it.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/backends/cpu/blas.hpp"
#include "engine/backends/cpu/elementwise.hpp"
#include "engine/backends/cpu/matmul.hpp"
#include "engine/backends/cpu/nn.hpp"
#include "engine/backends/cpu/reduce.hpp"
#include "engine/backends/cpu/shape_ops.hpp"
#include "engine/backends/registry.hpp"

namespace coolbench::engine {
namespace {

class cpu_backend final : public backend {
 public:
  cpu_backend() {
    for (const auto family :
         {cpu::elementwise_kernels(), cpu::shape_kernels(), cpu::matmul_kernels(),
          cpu::reduce_kernels(), cpu::conv_kernels(), cpu::pool_kernels()}) {
      m_kernels.insert(m_kernels.end(), family.begin(), family.end());
    }
    std::sort(m_kernels.begin(), m_kernels.end(),
              [](const auto& a, const auto& b) { return a.op_type < b.op_type; });
  }

  std::string_view name() const noexcept override { return "cpu"; }

  std::string describe() const override {
    const cpu::blas_library& b = cpu::blas();
    std::string text = "cpu (OpenBLAS " + b.core + ", " + std::to_string(b.threads) + " threads";
    if (!b.corrected.empty()) {
      text += "; its CPU detection chose " + b.corrected + ", coolbench set OPENBLAS_CORETYPE";
    }
    return text + ")";
  }

  bool supports(const node& n) const override {
    return n.domain.empty() && find(n.op_type) != nullptr;
  }

  void run(const node& n, std::span<const tensor* const> inputs,
           std::span<tensor> outputs) override {
    const cpu::kernel_entry* entry = n.domain.empty() ? find(n.op_type) : nullptr;
    if (entry == nullptr) throw invalid_argument("the cpu backend cannot run " + n.describe());
    entry->run(n, inputs, outputs);
  }

 private:
  const cpu::kernel_entry* find(std::string_view op_type) const {
    const auto it =
        std::lower_bound(m_kernels.begin(), m_kernels.end(), op_type,
                         [](const auto& e, std::string_view op) { return e.op_type < op; });
    return it != m_kernels.end() && it->op_type == op_type ? &*it : nullptr;
  }

  std::vector<cpu::kernel_entry> m_kernels;
};

}  // namespace

std::unique_ptr<backend> make_cpu_backend() { return std::make_unique<cpu_backend>(); }

}  // namespace coolbench::engine
