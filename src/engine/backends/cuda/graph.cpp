// Recording a run as a CUDA graph: stream capture on the device's stream (in
// thread-local mode, so another thread's CUDA calls are not disturbed), one
// instantiation, and a graph launch per run. The graph and its executable
// are adopted by the device layer, so a device release destroys them; the
// session then records again. The error codes the captured kernels carry
// index the messages kept with the graph, which each launch restores.
#include <cuda_runtime_api.h>

#include "core/cuda_check.hpp"
#include "engine/backends/cuda/backend.hpp"

namespace coolbench::engine::cuda {
namespace {

class cuda_graph final : public recorded_work {
 public:
  cuda_graph(cuda_backend& backend, cudaGraphExec_t exec, device::owned_resource owner,
             std::vector<std::string> messages)
      : m_backend(backend),
        m_exec(exec),
        m_owner(std::move(owner)),
        m_messages(std::move(messages)) {}

  void launch() override {
    if (!m_owner.valid()) {
      throw device::stale_resource("the CUDA graph of " + std::string(m_backend.name()) +
                                   " was destroyed by a device release: record it again");
    }
    m_backend.error_messages() = m_messages;
    COOLBENCH_CUDA_CALL(cudaGraphLaunch(m_exec, static_cast<cudaStream_t>(m_backend.stream())));
  }
  [[nodiscard]] bool valid() const noexcept override { return m_owner.valid(); }

 private:
  cuda_backend& m_backend;
  cudaGraphExec_t m_exec;
  device::owned_resource m_owner;
  std::vector<std::string> m_messages;
};

}  // namespace

void cuda_backend::prepare_recording() {
  static_cast<void>(blas());
  static_cast<void>(error_flag());
}

void cuda_backend::begin_recording() {
  m_messages_before_recording = m_error_messages.size();
  COOLBENCH_CUDA_CALL(cudaStreamBeginCapture(static_cast<cudaStream_t>(stream()),
                                             cudaStreamCaptureModeThreadLocal));
  m_recording = true;
}

std::unique_ptr<recorded_work> cuda_backend::end_recording() {
  m_recording = false;
  cudaGraph_t graph = nullptr;
  // The codes the captured kernels carry; none of them has run.
  std::vector<std::string> messages = m_error_messages;
  m_error_messages.resize(std::min(m_error_messages.size(), m_messages_before_recording));
  COOLBENCH_CUDA_CALL(cudaStreamEndCapture(static_cast<cudaStream_t>(stream()), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiateWithFlags(&exec, graph, 0);
  if (made != cudaSuccess) {
    cudaGraphDestroy(graph);
    COOLBENCH_CUDA_CALL(made);
  }
  device::owned_resource owner = lease().adopt(device::resource_kind::graph, [graph, exec] {
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  });
  return std::make_unique<cuda_graph>(*this, exec, std::move(owner), std::move(messages));
}

void cuda_backend::abandon_recording() noexcept {
  if (!m_recording) return;
  m_recording = false;
  m_error_messages.resize(std::min(m_error_messages.size(), m_messages_before_recording));
  cudaGraph_t graph = nullptr;
  try {
    // An invalidated capture ends with an error and no graph: nothing to keep.
    static_cast<void>(cudaStreamEndCapture(static_cast<cudaStream_t>(stream()), &graph));
  } catch (const std::exception&) {  // no lease: the capture went with the context
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  static_cast<void>(cudaGetLastError());
}

}  // namespace coolbench::engine::cuda
