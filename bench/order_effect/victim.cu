#include "victim.hpp"

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"
#include "device_common.cuh"

namespace order_effect {
namespace {

constexpr int seq = 128;
constexpr int hidden = 768;
constexpr int layers = 12;
constexpr int norm_threads = 256;

void check_driver(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* text = nullptr;
  cuGetErrorString(r, &text);
  throw coolbench::error(std::string(what) + ": " + (text != nullptr ? text : "unknown error"));
}

// One block per row: mean and variance through a shared-memory tree, then
// out = (in - mean) / std. Dynamic shared memory, 2 floats per thread.
__global__ void row_norm_kernel(const __half* in, __half* out, int cols) {
  extern __shared__ float partial[];
  const std::size_t row = std::size_t{blockIdx.x} * static_cast<std::size_t>(cols);
  float sum = 0.0f;
  float squares = 0.0f;
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += static_cast<int>(blockDim.x)) {
    const float v = __half2float(in[row + static_cast<std::size_t>(c)]);
    sum += v;
    squares += v * v;
  }
  partial[threadIdx.x] = sum;
  partial[threadIdx.x + blockDim.x] = squares;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      partial[threadIdx.x] += partial[threadIdx.x + half];
      partial[threadIdx.x + blockDim.x] += partial[threadIdx.x + half + blockDim.x];
    }
    __syncthreads();
  }
  const float mean = partial[0] / static_cast<float>(cols);
  const float inv = rsqrtf(partial[blockDim.x] / static_cast<float>(cols) - mean * mean + 1e-5f);
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += static_cast<int>(blockDim.x)) {
    const std::size_t i = row + static_cast<std::size_t>(c);
    out[i] = __float2half((__half2float(in[i]) - mean) * inv);
  }
}

// x = GELU(x) (tanh form) + residual / 100 (residual may be x itself).
__global__ void gelu_residual_kernel(__half* x, const __half* residual, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const float v = __half2float(x[i]);
  const float g = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  x[i] = __float2half(g + 0.01f * __half2float(residual[i]));
}

__half* half_of(void* p) { return static_cast<__half*>(p); }

}  // namespace

std::string describe(const victim_config& c) {
  std::string s =
      c.compute == gemm_compute::fp16 ? "fp16-accumulate GEMMs" : "fp32-accumulate GEMMs";
  if (c.carveout == carveout_hint::own_kernels) s += ", max-L1 hint on its own kernels";
  if (c.carveout == carveout_hint::all_kernels) s += ", max-L1 hint on every kernel";
  if (c.workspace == blas_workspace::none) s += ", no cuBLAS workspace";
  if (c.workspace == blas_workspace::library) s += ", cuBLAS's own workspace";
  if (c.stream == victim_stream::blocking) s += ", blocking stream";
  if (!c.form.input_copy) s += ", no input copy";
  if (c.form.wide_data) s += ", wide data";
  if (c.form.in_place) s += ", in place";
  if (c.form.launches_per_event != 1)
    s += ", " + std::to_string(c.form.launches_per_event) + " replays per event";
  if (c.form.sync_each) s += ", synchronised per interval";
  if (c.form.raw_memory) s += ", cudaMalloc'd";
  return s;
}

namespace {

victim_form parse_form(const std::string& spec) {
  victim_form f;
  if (spec.empty()) return f;
  if (spec == "reference") return {false, true, true, 10, true, true};
  for (std::size_t from = 0;;) {
    const auto plus = spec.find('+', from);
    const std::string knob = spec.substr(from, plus - from);
    if (knob == "nocopy") {
      f.input_copy = false;
    } else if (knob == "wide") {
      f.wide_data = true;
    } else if (knob == "inplace") {
      f.in_place = true;
    } else if (knob == "batch10") {
      f.launches_per_event = 10;
    } else if (knob == "sync") {
      f.sync_each = true;
    } else if (knob == "rawmem") {
      f.raw_memory = true;
    } else {
      throw coolbench::error(
          "victim form: reference, or nocopy, wide, inplace, batch10, sync, rawmem joined by '+', "
          "not " +
          knob);
    }
    if (plus == std::string::npos) break;
    from = plus + 1;
  }
  return f;
}

std::string form_spec(const victim_form& f) {
  std::string s;
  auto add = [&](bool on, const char* knob) {
    if (on) s += (s.empty() ? "" : "+") + std::string(knob);
  };
  add(!f.input_copy, "nocopy");
  add(f.wide_data, "wide");
  add(f.in_place, "inplace");
  add(f.launches_per_event == 10, "batch10");
  add(f.sync_each, "sync");
  add(f.raw_memory, "rawmem");
  return s;
}

}  // namespace

victim_config parse_victim(const std::string& spec) {
  victim_config c;
  std::vector<std::string> parts;
  for (std::size_t from = 0;;) {
    const auto colon = spec.find(':', from);
    parts.push_back(spec.substr(from, colon - from));
    if (colon == std::string::npos) break;
    from = colon + 1;
  }
  const std::string gemms = parts[0];
  const std::string work = parts.size() > 1 ? parts[1] : "lease";
  const std::string stream = parts.size() > 2 ? parts[2] : "lease";
  if (parts.size() > 4) throw coolbench::error("victim: at most four ':'-separated parts");
  c.form = parse_form(parts.size() > 3 ? parts[3] : "");
  if (stream != "lease" && stream != "blocking")
    throw coolbench::error("victim stream: lease or blocking");
  c.stream = stream == "lease" ? victim_stream::lease : victim_stream::blocking;
  if (gemms != "fp16" && gemms != "fp32") throw coolbench::error("victim GEMMs: fp16 or fp32");
  c.compute = gemms == "fp16" ? gemm_compute::fp16 : gemm_compute::fp32;
  if (work == "lease")
    c.workspace = blas_workspace::lease;
  else if (work == "none")
    c.workspace = blas_workspace::none;
  else if (work == "library")
    c.workspace = blas_workspace::library;
  else
    throw coolbench::error("victim workspace: lease, none or library");
  return c;
}

std::string to_spec(const victim_config& c) {
  const char* work = c.workspace == blas_workspace::lease  ? "lease"
                     : c.workspace == blas_workspace::none ? "none"
                                                           : "library";
  const std::string form = form_spec(c.form);
  return std::string(c.compute == gemm_compute::fp16 ? "fp16:" : "fp32:") + work +
         (c.stream == victim_stream::blocking ? ":blocking" : ":lease") +
         (form.empty() ? "" : ":" + form);
}

namespace {
enum buffer_index : std::size_t {
  w_qkv,
  w_out,
  w_up,
  w_down,
  x,
  h,
  qkv,
  att,
  ff,
  input,
  workspace
};
}

victim::victim(dev::lease& lease, const victim_config& config)
    : m_lease(lease), m_config(config), m_stream(lease.stream()) {
  if (config.stream == victim_stream::blocking) {
    cudaStream_t own = nullptr;
    COOLBENCH_CUDA_CALL(cudaStreamCreate(&own));
    m_stream = own;
    m_owned.push_back(lease.adopt(dev::resource_kind::stream, [own] { cudaStreamDestroy(own); }));
  }
  const std::size_t weights[4] = {std::size_t{hidden} * 3 * hidden, std::size_t{hidden} * hidden,
                                  std::size_t{hidden} * 4 * hidden,
                                  std::size_t{4} * hidden * hidden};
  const std::size_t acts[6] = {std::size_t{seq} * hidden,     std::size_t{seq} * hidden,
                               std::size_t{seq} * 3 * hidden, std::size_t{seq} * hidden,
                               std::size_t{seq} * 4 * hidden, std::size_t{seq} * hidden};
  const auto allocate = [&](std::size_t bytes) {
    if (config.form.raw_memory) {
      void* p = nullptr;
      COOLBENCH_CUDA_CALL(cudaMalloc(&p, bytes));
      m_raw.push_back(p);
      m_ptr.push_back(p);
    } else {
      m_buffers.push_back(lease.allocate(bytes));
      m_ptr.push_back(m_buffers.back().get());
    }
    return m_ptr.back();
  };
  std::uint32_t seed = 11;
  for (int i = 0; i < 4; ++i) {
    const std::size_t n = weights[i] * layers;
    void* p = allocate(n * sizeof(__half));
    const float k = i == 3 ? 4.0f * hidden : static_cast<float>(hidden);
    const float scale = config.form.wide_data ? 0.5f : std::sqrt(3.0f / k);
    fill<__half>(p, n, seed++, scale, m_stream);
  }
  for (const std::size_t n : acts) {
    void* p = allocate(n * sizeof(__half));
    m_activations.push_back({p, n, seed, config.form.wide_data ? 0.5f : 1.0f});
    fill<__half>(p, n, seed++, m_activations.back().scale, m_stream);
  }
  (void)allocate(workspace_bytes);
  // The own kernels' carveout hint, 0 = the largest L1; once set, it is set
  // back to -1 ("no preference") for a victim without a hint.
  static bool hinted = false;
  const int own = config.carveout == carveout_hint::none ? -1 : 0;
  if (own == 0) hinted = true;
  for (const void* k : {reinterpret_cast<const void*>(&row_norm_kernel),
                        reinterpret_cast<const void*>(&gelu_residual_kernel)}) {
    if (hinted)
      COOLBENCH_CUDA_CALL(
          cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, own));
  }
  cublasHandle_t handle = nullptr;
  COOLBENCH_CUBLAS_CALL(cublasCreate(&handle));
  m_handle = handle;
  m_owned.push_back(
      lease.adopt(dev::resource_kind::blas_handle, [handle] { cublasDestroy(handle); }));
  COOLBENCH_CUBLAS_CALL(cublasSetStream(handle, m_stream));
  if (config.workspace == blas_workspace::lease)
    COOLBENCH_CUBLAS_CALL(cublasSetWorkspace(handle, m_ptr[workspace], workspace_bytes));
  if (config.workspace == blas_workspace::none)
    COOLBENCH_CUBLAS_CALL(cublasSetWorkspace(handle, nullptr, 0));
  build_graph();
}

victim::~victim() {
  // The graph and the handle before the memory they use.
  while (!m_owned.empty()) m_owned.pop_back();
  m_buffers.clear();
  if (!m_raw.empty()) {
    // Freed now, so a release after this victim is not refused for memory the library
    // did not allocate. After a release the pointers are gone with the context.
    if (m_lease.generation() == dev::device::get(m_lease.ordinal()).status().generation) {
      (void)cudaDeviceSynchronize();
      for (void* p : m_raw) (void)cudaFree(p);
    }
    m_raw.clear();
  }
}

void victim::gemm(const void* a, int lda, const void* b, int ldb, void* c, int ldc, int m, int n,
                  int k) {
  // Row-major c[m x n] = a[m x k] b[k x n], as cuBLAS's column-major c^T = b^T a^T.
  if (m_config.compute == gemm_compute::fp16) {
    const __half one = __float2half(1.0f);
    const __half zero = __float2half(0.0f);
    COOLBENCH_CUBLAS_CALL(cublasGemmEx(m_handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b,
                                       CUDA_R_16F, ldb, a, CUDA_R_16F, lda, &zero, c, CUDA_R_16F,
                                       ldc, CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT));
  } else {
    const float one = 1.0f;
    const float zero = 0.0f;
    COOLBENCH_CUBLAS_CALL(cublasGemmEx(m_handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b,
                                       CUDA_R_16F, ldb, a, CUDA_R_16F, lda, &zero, c, CUDA_R_16F,
                                       ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

void victim::enqueue(const std::function<void(const std::string&)>& mark, const op_filter& filter) {
  const auto op = [&](const char* label, const auto& launch) {
    if (filter.labels != nullptr) {
      if (std::find(filter.labels->begin(), filter.labels->end(), label) == filter.labels->end())
        filter.labels->emplace_back(label);
      return;
    }
    if (filter.only != nullptr && *filter.only != label) return;
    launch();
    mark(label);
  };
  const auto& b = m_ptr;
  const victim_form& form = m_config.form;
  if (form.input_copy) {
    op("copy input", [&] {
      const std::size_t row_bytes = std::size_t{seq} * hidden * sizeof(__half);
      COOLBENCH_CUDA_CALL(
          cudaMemcpyAsync(b[x], b[input], row_bytes, cudaMemcpyDeviceToDevice, m_stream));
    });
  }
  // In place (the reference's flow) the norms overwrite their input and the output
  // projection reads qkv's first 128 x 768 elements as one matrix.
  __half* normed_x = form.in_place ? half_of(b[x]) : half_of(b[h]);
  __half* normed_att = form.in_place ? half_of(b[att]) : half_of(b[h]);
  const int qkv_ld = form.in_place ? hidden : 3 * hidden;
  const unsigned norm_bytes = 2 * norm_threads * sizeof(float);
  for (int l = 0; l < layers; ++l) {
    const auto layer = static_cast<std::size_t>(l);
    const __half* wq = half_of(b[w_qkv]) + layer * hidden * 3 * hidden;
    const __half* wo = half_of(b[w_out]) + layer * hidden * hidden;
    const __half* wu = half_of(b[w_up]) + layer * hidden * 4 * hidden;
    const __half* wd = half_of(b[w_down]) + layer * 4 * hidden * hidden;
    op("row norm 128x768", [&] {
      row_norm_kernel<<<seq, norm_threads, norm_bytes, m_stream>>>(half_of(b[x]), normed_x, hidden);
      COOLBENCH_CUDA_CALL(cudaGetLastError());
    });
    op("gemm 128x2304x768", [&] {
      gemm(normed_x, hidden, wq, 3 * hidden, b[qkv], 3 * hidden, seq, 3 * hidden, hidden);
    });
    // Attention itself is left out; its output projection reads the first third of qkv.
    op("gemm 128x768x768",
       [&] { gemm(b[qkv], qkv_ld, wo, hidden, b[att], hidden, seq, hidden, hidden); });
    op("gelu+residual 128x768", [&] {
      gelu_residual_kernel<<<seq * hidden / 256, 256, 0, m_stream>>>(half_of(b[att]), half_of(b[x]),
                                                                     seq * hidden);
      COOLBENCH_CUDA_CALL(cudaGetLastError());
    });
    op("row norm 128x768", [&] {
      row_norm_kernel<<<seq, norm_threads, norm_bytes, m_stream>>>(half_of(b[att]), normed_att,
                                                                   hidden);
      COOLBENCH_CUDA_CALL(cudaGetLastError());
    });
    op("gemm 128x3072x768", [&] {
      gemm(normed_att, hidden, wu, 4 * hidden, b[ff], 4 * hidden, seq, 4 * hidden, hidden);
    });
    op("gelu 128x3072", [&] {
      gelu_residual_kernel<<<seq * 4 * hidden / 256, 256, 0, m_stream>>>(
          half_of(b[ff]), half_of(b[ff]), seq * 4 * hidden);
      COOLBENCH_CUDA_CALL(cudaGetLastError());
    });
    op("gemm 128x768x3072",
       [&] { gemm(b[ff], 4 * hidden, wd, hidden, b[x], hidden, seq, hidden, 4 * hidden); });
  }
}

namespace {

/// The driver's function behind a kernel node (a library's kernel may come as a CUkernel).
CUfunction node_function(cudaGraphNode_t node, unsigned& dynamic_shared) {
  CUDA_KERNEL_NODE_PARAMS params{};
  check_driver(cuGraphKernelNodeGetParams(reinterpret_cast<CUgraphNode>(node), &params),
               "cuGraphKernelNodeGetParams");
  dynamic_shared = params.sharedMemBytes;
  CUfunction f = params.func;
  if (f == nullptr && params.kern != nullptr)
    check_driver(cuKernelGetFunction(&f, params.kern), "cuKernelGetFunction");
  return f;
}

/// Every kernel node's function: its name and shared memory; with `hint`, asks
/// each for the largest L1 (a function attribute, so it holds for the graph).
std::vector<kernel_info> inventory(cudaGraph_t graph, bool hint) {
  std::size_t count = 0;
  COOLBENCH_CUDA_CALL(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  COOLBENCH_CUDA_CALL(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::map<std::string, kernel_info> by_name;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    COOLBENCH_CUDA_CALL(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    unsigned dynamic_shared = 0;
    CUfunction f = node_function(node, dynamic_shared);
    if (hint) {
      check_driver(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 0),
                   "cuFuncSetAttribute(carveout)");
    }
    const char* name = nullptr;
    check_driver(cuFuncGetName(&name, f), "cuFuncGetName");
    kernel_info& k = by_name[name != nullptr ? name : "?"];
    k.name = name != nullptr ? name : "?";
    check_driver(cuFuncGetAttribute(&k.static_shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f),
                 "cuFuncGetAttribute(shared)");
    check_driver(
        cuFuncGetAttribute(&k.carveout, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, f),
        "cuFuncGetAttribute(carveout)");
    k.dynamic_shared_bytes = dynamic_shared;
    ++k.count;
  }
  std::vector<kernel_info> out;
  for (auto& [name, k] : by_name) out.push_back(k);
  return out;
}

}  // namespace

void victim::build_graph() {
  // Eagerly once, so cuBLAS picks its kernels and modules load outside the capture.
  enqueue([](const std::string&) {});
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(m_stream));
  cudaGraph_t graph = nullptr;
  COOLBENCH_CUDA_CALL(cudaStreamBeginCapture(m_stream, cudaStreamCaptureModeThreadLocal));
  enqueue([](const std::string&) {});
  COOLBENCH_CUDA_CALL(cudaStreamEndCapture(m_stream, &graph));
  m_kernels = inventory(graph, m_config.carveout == carveout_hint::all_kernels);
  cudaGraphExec_t exec = nullptr;
  COOLBENCH_CUDA_CALL(cudaGraphInstantiate(&exec, graph, 0));
  COOLBENCH_CUDA_CALL(cudaGraphDestroy(graph));
  m_exec = exec;
  m_owned.push_back(
      m_lease.adopt(dev::resource_kind::graph, [exec] { cudaGraphExecDestroy(exec); }));
  while (m_events.size() < 512) m_events.push_back(m_lease.create_event());
}

double victim::median_ms(int warmups, int replays) const {
  for (int i = 0; i < warmups; ++i) COOLBENCH_CUDA_CALL(cudaGraphLaunch(m_exec, m_stream));
  const int per_event = std::max(1, m_config.form.launches_per_event);
  const int intervals = std::max(10, replays / per_event);
  std::vector<double> ms;
  if (m_config.form.sync_each) {
    // The reference's loop: the host waits for each interval, the GPU idles between them.
    for (int i = 0; i < intervals; ++i) {
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_events[0], m_stream));
      for (int l = 0; l < per_event; ++l) COOLBENCH_CUDA_CALL(cudaGraphLaunch(m_exec, m_stream));
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_events[1], m_stream));
      COOLBENCH_CUDA_CALL(cudaEventSynchronize(m_events[1]));
      float e = 0;
      COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&e, m_events[0], m_events[1]));
      ms.push_back(e / static_cast<float>(per_event));
    }
  }
  for (int done = static_cast<int>(ms.size()); done < intervals;) {
    const int batch = std::min(intervals - done, static_cast<int>(m_events.size()) - 1);
    COOLBENCH_CUDA_CALL(cudaEventRecord(m_events[0], m_stream));
    for (int i = 1; i <= batch; ++i) {
      for (int l = 0; l < per_event; ++l) COOLBENCH_CUDA_CALL(cudaGraphLaunch(m_exec, m_stream));
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_events[static_cast<std::size_t>(i)], m_stream));
    }
    COOLBENCH_CUDA_CALL(cudaStreamSynchronize(m_stream));
    for (int i = 1; i <= batch; ++i) {
      float e = 0;
      COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&e, m_events[static_cast<std::size_t>(i - 1)],
                                               m_events[static_cast<std::size_t>(i)]));
      ms.push_back(e / static_cast<float>(per_event));
    }
    done += batch;
  }
  std::nth_element(ms.begin(), ms.begin() + static_cast<long>(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

std::vector<std::pair<std::string, double>> victim::per_op_graph_ms(int warmups, int replays) {
  std::vector<std::string> labels;
  enqueue([](const std::string&) {}, {nullptr, &labels});
  const int runs = std::clamp(replays, 1, static_cast<int>(m_events.size()) - 1);
  std::vector<std::pair<std::string, double>> out;
  for (const std::string& label : labels) {
    // Each operation from the activations as made: an in-place operation replayed alone
    // (the GELU, 12 x 220 times) drifts its data to inf or zero, and the next one would be
    // timed on that.
    for (const activation& a : m_activations)
      fill<__half>(a.data, a.count, a.seed, a.scale, m_stream);
    cudaGraph_t graph = nullptr;
    COOLBENCH_CUDA_CALL(cudaStreamBeginCapture(m_stream, cudaStreamCaptureModeThreadLocal));
    enqueue([](const std::string&) {}, {&label, nullptr});
    COOLBENCH_CUDA_CALL(cudaStreamEndCapture(m_stream, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    COOLBENCH_CUDA_CALL(made);
    for (int i = 0; i < warmups; ++i) COOLBENCH_CUDA_CALL(cudaGraphLaunch(exec, m_stream));
    COOLBENCH_CUDA_CALL(cudaEventRecord(m_events[0], m_stream));
    for (int i = 1; i <= runs; ++i) {
      COOLBENCH_CUDA_CALL(cudaGraphLaunch(exec, m_stream));
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_events[static_cast<std::size_t>(i)], m_stream));
    }
    COOLBENCH_CUDA_CALL(cudaStreamSynchronize(m_stream));
    std::vector<double> ms;
    for (int i = 1; i <= runs; ++i) {
      float e = 0;
      COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&e, m_events[static_cast<std::size_t>(i - 1)],
                                               m_events[static_cast<std::size_t>(i)]));
      ms.push_back(e);
    }
    COOLBENCH_CUDA_CALL(cudaGraphExecDestroy(exec));
    std::nth_element(ms.begin(), ms.begin() + static_cast<long>(ms.size() / 2), ms.end());
    out.emplace_back(label, ms[ms.size() / 2]);
  }
  return out;
}

std::vector<std::pair<std::string, double>> victim::per_kernel_ms(int passes) {
  std::vector<std::string> labels;
  std::vector<std::vector<double>> times;  // [op][pass]
  for (int p = 0; p < passes; ++p) {
    std::size_t op = 0;
    COOLBENCH_CUDA_CALL(cudaEventRecord(m_events[0], m_stream));
    enqueue([&](const std::string& label) {
      ++op;
      COOLBENCH_CUDA_CALL(cudaEventRecord(m_events.at(op), m_stream));
      if (p == 0) labels.push_back(label);
    });
    COOLBENCH_CUDA_CALL(cudaStreamSynchronize(m_stream));
    times.resize(op);
    for (std::size_t i = 1; i <= op; ++i) {
      float e = 0;
      COOLBENCH_CUDA_CALL(cudaEventElapsedTime(&e, m_events[i - 1], m_events[i]));
      times[i - 1].push_back(e);
    }
  }
  std::vector<std::pair<std::string, double>> out;  // summed per label, first-seen order
  for (std::size_t i = 0; i < labels.size(); ++i) {
    auto& t = times[i];
    std::nth_element(t.begin(), t.begin() + static_cast<long>(t.size() / 2), t.end());
    auto it =
        std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == labels[i]; });
    if (it == out.end())
      out.emplace_back(labels[i], t[t.size() / 2]);
    else
      it->second += t[t.size() / 2];
  }
  return out;
}

}  // namespace order_effect
