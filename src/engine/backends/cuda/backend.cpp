#include "engine/backends/cuda/backend.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "core/cuda_check.hpp"
#include "engine/backends/cuda/attention.hpp"
#include "engine/backends/registry.hpp"

namespace coolbench::engine {
namespace cuda {
namespace {

// A device tensor's memory: a caching-allocator block, stale after a release.
class buffer_storage final : public device_storage {
 public:
  buffer_storage(device::buffer buffer, int ordinal)
      : m_buffer(std::move(buffer)), m_ordinal(ordinal) {}
  void* address() const override { return m_buffer.get(); }
  bool valid() const noexcept override { return m_buffer.valid(); }
  std::string location() const override { return "cuda:" + std::to_string(m_ordinal); }

 private:
  device::buffer m_buffer;
  int m_ordinal;
};

// Small host tensors copy_in keeps beside their device copy, so that a node
// reading a constant's shape, axes or scalar on the host needs no copy back.
constexpr std::size_t k_mirror_max_bytes = 4096;

// A device copy of a host tensor, with the host data kept beside it.
class mirrored_storage final : public device_storage {
 public:
  mirrored_storage(std::shared_ptr<device_storage> device, tensor host)
      : m_device(std::move(device)), m_host(std::move(host)) {}
  void* address() const override { return m_device->address(); }
  bool valid() const noexcept override { return m_device->valid(); }
  std::string location() const override { return m_device->location(); }
  [[nodiscard]] const tensor& host() const noexcept { return m_host; }

 private:
  std::shared_ptr<device_storage> m_device;
  tensor m_host;
};

bool accepts(type_rule rule, dtype type) {
  switch (rule) {
    case type_rule::floats: return is_float(type);
    case type_rule::numeric: return type != dtype::boolean;
    case type_rule::booleans: return type == dtype::boolean;
    case type_rule::any:
    case type_rule::shape_only: return true;
  }
  return false;
}

}  // namespace

const tensor& op_call::in(std::size_t i) const {
  if (i >= inputs.size() || inputs[i] == nullptr) {
    fail("expected input " + std::to_string(i) + ", got none");
  }
  return *inputs[i];
}

tensor op_call::allocate(dtype type, shape_t shape) const {
  return backend.allocate(type, std::move(shape));
}

namespace {

// `t` on the host: itself, the host copy kept with it, or a copy back.
tensor host_value(const op_call& call, const tensor& t) {
  if (!t.on_device()) return t;
  if (auto mirror = cuda_backend::host_mirror(t)) return std::move(*mirror);
  call.backend.note_blocking("reads a computed value on the host");
  return call.backend.copy_out(t);
}

}  // namespace

std::vector<std::int64_t> op_call::host_ints(const tensor& t) const {
  const tensor host = host_value(*this, t);
  std::vector<std::int64_t> values;
  if (host.type() == dtype::int64) {
    const auto v = host.data<std::int64_t>();
    values.assign(v.begin(), v.end());
  } else if (host.type() == dtype::int32) {
    const auto v = host.data<std::int32_t>();
    values.assign(v.begin(), v.end());
  } else {
    fail("expected an int64 or int32 input, got " + std::string(to_string(host.type())));
  }
  return values;
}

double op_call::host_scalar(const tensor& t) const {
  if (t.size() != 1) fail("expected a scalar input, got shape " + to_string(t.shape()));
  const tensor host = host_value(*this, t);
  switch (host.type()) {
    case dtype::float32: return host.data<float>()[0];
    case dtype::int64: return static_cast<double>(host.data<std::int64_t>()[0]);
    case dtype::int32: return host.data<std::int32_t>()[0];
    case dtype::boolean: return host.data<bool>()[0] ? 1 : 0;
    case dtype::float16:
    case dtype::bfloat16: {
      std::uint16_t bits = 0;
      std::memcpy(&bits, host.raw().data(), sizeof bits);
      return host.type() == dtype::float16 ? half_to_float(bits) : bfloat16_to_float(bits);
    }
  }
  return 0;
}

void op_call::fail(const std::string& what) const {
  throw invalid_argument(n.describe() + " on " + std::string(backend.name()) + ": " + what);
}

std::pair<int*, int> op_call::device_check(const std::string& what) const {
  int* flag = backend.error_flag();
  return {flag, backend.error_code(n.describe() + " on " + std::string(backend.name()) + ": " +
                                   what + " (found on the device)")};
}

cuda_backend::cuda_backend(int ordinal)
    : m_ordinal(ordinal), m_name("cuda:" + std::to_string(ordinal)) {
  static_cast<void>(device::device::get(ordinal));  // throws for a GPU that is not there
  for (const auto family : {elementwise_ops(), data_ops(), constant_ops(), reduce_ops(),
                            matmul_ops(), nn_ops(), fused_ops(), attention_ops()}) {
    m_ops.insert(m_ops.end(), family.begin(), family.end());
  }
  std::sort(m_ops.begin(), m_ops.end(), [](const auto& a, const auto& b) {
    return std::tie(a.domain, a.op_type) < std::tie(b.domain, b.op_type);
  });
}

std::string cuda_backend::describe() const {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, m_ordinal) != cudaSuccess) {
    cudaGetLastError();
    return m_name;
  }
  return m_name + " (" + properties.name + ", sm_" + std::to_string(properties.major) +
         std::to_string(properties.minor) + ", cuBLASLt)";
}

const op_entry* cuda_backend::find(std::string_view domain, std::string_view op_type) const {
  const auto key = std::tie(domain, op_type);
  const auto it = std::lower_bound(m_ops.begin(), m_ops.end(), key, [](const auto& e, auto k) {
    return std::tie(e.domain, e.op_type) < k;
  });
  return it != m_ops.end() && it->domain == domain && it->op_type == op_type ? &*it : nullptr;
}

bool cuda_backend::supports(const node& n) const { return find(n.domain, n.op_type) != nullptr; }

std::optional<refusal> cuda_backend::refuses(
    const node& n, std::span<const std::optional<dtype>> input_types) const {
  const op_entry* entry = find(n.domain, n.op_type);
  if (entry == nullptr) return refusal{};
  if (auto detail = unsupported_form(n)) return refusal{refusal::reason::form, {}, *detail};
  // The data input: Where's is its second (the first is the condition).
  const std::size_t data = n.op_type == "Where" ? 1 : 0;
  if (data < input_types.size() && input_types[data] &&
      !accepts(entry->types, *input_types[data])) {
    return refusal{refusal::reason::dtype, *input_types[data], {}};
  }
  return std::nullopt;
}

void cuda_backend::run(const node& n, std::span<const tensor* const> inputs,
                       std::span<tensor> outputs) {
  const op_entry* entry = find(n.domain, n.op_type);
  if (entry == nullptr)
    throw invalid_argument("the " + m_name + " backend cannot run " + n.describe());
  const op_call call{*this, n, inputs, outputs, stream()};
  m_running = &n;
  try {
    entry->run(call);
  } catch (...) {
    m_running = nullptr;
    throw;
  }
  m_running = nullptr;
}

std::optional<tensor> cuda_backend::host_mirror(const tensor& value) {
  const auto* mirrored = dynamic_cast<const mirrored_storage*>(value.storage().get());
  if (mirrored == nullptr) return std::nullopt;
  const tensor& host = mirrored->host();
  // A view (Reshape, Squeeze) of the copy: the same bytes from its offset.
  const auto offset = static_cast<std::size_t>(static_cast<const std::byte*>(value.device_data()) -
                                               static_cast<const std::byte*>(mirrored->address()));
  if (offset + value.bytes() > host.bytes()) return std::nullopt;
  const auto bytes = host.raw().subspan(offset, value.bytes());
  return tensor(value.type(), value.shape(), std::vector<std::byte>(bytes.begin(), bytes.end()));
}

void cuda_backend::note_blocking(const std::string& what) {
  if (m_running != nullptr && m_blocking_note.empty()) {
    m_blocking_note = m_running->describe() + ": " + what;
  }
}

std::string cuda_backend::take_blocking_note() {
  std::string note;
  note.swap(m_blocking_note);
  return note;
}

device::lease& cuda_backend::lease() {
  if (!m_lease) m_lease.emplace(device::device::get(m_ordinal).acquire());
  return *m_lease;
}

device::buffer cuda_backend::device_block(std::size_t bytes, const std::string& what) {
  try {
    device::buffer block = lease().allocate(std::max<std::size_t>(bytes, 1));
    ++m_device_allocations;
    return block;
  } catch (const cuda_error& e) {
    throw cuda_error(m_name + ": out of device memory for " + what + " (" + std::to_string(bytes) +
                         " bytes); free device memory or use smaller inputs (" + e.what() + ")",
                     e.code());
  }
}

tensor cuda_backend::allocate(dtype type, shape_t shape) {
  const std::int64_t count = element_count(shape);
  const std::size_t bytes = static_cast<std::size_t>(count) * size_of(type);
  std::shared_ptr<device_storage> storage;
  if (m_source != nullptr) {
    storage = m_source->take(bytes);
  } else {
    storage = std::make_shared<buffer_storage>(
        device_block(bytes,
                     "a " + std::string(to_string(type)) + " tensor of shape " + to_string(shape)),
        m_ordinal);
  }
  if (m_poison && bytes > 0) {
    COOLBENCH_CUDA_CALL(
        cudaMemsetAsync(storage->address(), 0xFF, bytes, static_cast<cudaStream_t>(stream())));
  }
  return {type, std::move(shape), std::move(storage)};
}

std::shared_ptr<device_storage> cuda_backend::allocate_block(std::size_t bytes) {
  return std::make_shared<buffer_storage>(device_block(bytes, "a block of the session's memory"),
                                          m_ordinal);
}

void cuda_backend::copy_into(const tensor& host, const tensor& target) {
  if (host.type() != target.type() || host.bytes() != target.bytes()) {
    throw invalid_argument("copy_into: a " + std::string(to_string(host.type())) + " tensor of " +
                           to_string(host.shape()) + " does not fit a " +
                           std::string(to_string(target.type())) + " one of " +
                           to_string(target.shape()));
  }
  if (host.bytes() == 0) return;
  COOLBENCH_CUDA_CALL(cudaMemcpyAsync(target.device_data(), host.raw().data(), host.bytes(),
                                      cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream())));
  synchronize();  // the host tensor may go once this returns
}

std::uint64_t cuda_backend::context_generation() { return lease().generation(); }

void cuda_backend::trim() noexcept {
  try {
    device::device::get(m_ordinal).empty_cache();
  } catch (const std::exception&) {  // a cache kept is only memory held
  }
}

tensor cuda_backend::copy_in(const tensor& host) {
  if (host.on_device()) return host;
  note_blocking("copies host data to the device");
  tensor value = allocate(host.type(), host.shape());
  if (host.bytes() <= k_mirror_max_bytes) {
    value = tensor(value.type(), value.shape(),
                   std::make_shared<mirrored_storage>(value.storage(), host));
  }
  if (host.bytes() > 0) {
    COOLBENCH_CUDA_CALL(cudaMemcpyAsync(value.device_data(), host.raw().data(), host.bytes(),
                                        cudaMemcpyHostToDevice,
                                        static_cast<cudaStream_t>(stream())));
    // The host tensor may go before the copy ran (pageable memory is staged,
    // but only up to a size): wait, so the caller may drop it.
    synchronize();
  }
  return value;
}

tensor cuda_backend::copy_out(const tensor& value) {
  if (!value.on_device()) return value;
  note_blocking("copies a value back to the host");
  tensor host(value.type(), value.shape());
  if (value.bytes() > 0) {
    COOLBENCH_CUDA_CALL(cudaMemcpyAsync(host.raw().data(), value.device_data(), value.bytes(),
                                        cudaMemcpyDeviceToHost,
                                        static_cast<cudaStream_t>(stream())));
  }
  synchronize();
  return host;
}

void cuda_backend::synchronize() {
  const auto queue = static_cast<cudaStream_t>(stream());
  if (m_error_messages.empty() || !m_error_flag.valid()) {
    m_error_messages.clear();
    COOLBENCH_CUDA_CALL(cudaStreamSynchronize(queue));
    return;
  }
  int code = 0;
  COOLBENCH_CUDA_CALL(
      cudaMemcpyAsync(&code, m_error_flag.get(), sizeof code, cudaMemcpyDeviceToHost, queue));
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(queue));
  std::vector<std::string> messages;
  messages.swap(m_error_messages);
  if (code == 0) return;
  COOLBENCH_CUDA_CALL(cudaMemsetAsync(m_error_flag.get(), 0, sizeof code, queue));
  COOLBENCH_CUDA_CALL(cudaStreamSynchronize(queue));
  const auto index = static_cast<std::size_t>(code - 1);
  throw invalid_argument(index < messages.size() ? messages[index]
                                                 : "a CUDA kernel reported an invalid input");
}

int* cuda_backend::error_flag() {
  if (!m_error_flag.valid()) {  // first use, or made stale by a device release
    m_error_messages.clear();
    m_error_flag = lease().allocate(sizeof(int));
    COOLBENCH_CUDA_CALL(
        cudaMemsetAsync(m_error_flag.get(), 0, sizeof(int), static_cast<cudaStream_t>(stream())));
  }
  return static_cast<int*>(m_error_flag.get());
}

int cuda_backend::error_code(std::string message) {
  m_error_messages.push_back(std::move(message));
  return static_cast<int>(m_error_messages.size());
}

void* cuda_backend::stream() { return lease().stream(); }

void cuda_backend::end_run() noexcept { m_lease.reset(); }

}  // namespace cuda

std::unique_ptr<backend> make_cuda_backend(int ordinal) {
  return std::make_unique<cuda::cuda_backend>(ordinal);
}

}  // namespace coolbench::engine
