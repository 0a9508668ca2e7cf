// The backends' own factories, behind make_backend (backend.hpp).
#pragma once

#include <memory>

#include "engine/backend.hpp"

namespace coolbench::engine {

[[nodiscard]] std::unique_ptr<backend> make_cpu_backend();
#if COOLBENCH_ENGINE_CUDA
/// The CUDA backend on this ordinal. Throws invalid_argument when there is no
/// such GPU and not_available without a CUDA driver.
[[nodiscard]] std::unique_ptr<backend> make_cuda_backend(int ordinal);
#endif

}  // namespace coolbench::engine
