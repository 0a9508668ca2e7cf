// The ops the fusion passes make (engine/fusion), in k_fused_domain:
// FusedGemm (cuBLASLt with a bias epilogue), FusedLayerNorm and
// FusedElementwise (fused_layer_norm.cu, fused_elementwise.cu).
#include <string>

#include "engine/backends/cuda/fused_blas.hpp"
#include "engine/backends/cuda/fused_kernels.hpp"
#include "engine/backends/cuda/plan.hpp"
#include "engine/fusion/fusion.hpp"

namespace coolbench::engine::cuda {

ew_program bias_activation_program(dtype type, bool bias, const std::string& activation) {
  const ew_round round = ew_round_for(type);
  ew_program program;
  program.code.push_back({ew_op::load, 0, 0, 0, 0, ew_round::none});
  if (bias) {
    program.code.push_back({ew_op::load, 1, 1, 0, 0, ew_round::none});
    program.code.push_back({ew_op::add, 0, 0, 1, 0, round});
  }
  if (activation != "none") {
    const ew_op op = activation == "relu"       ? ew_op::relu
                     : activation == "gelu_erf" ? ew_op::gelu_erf
                                                : ew_op::gelu_tanh;
    program.code.push_back({op, 0, 0, 0, 0, round});
  }
  return program;
}

namespace {

void require_type(const op_call& call, const tensor& t, dtype type, const char* what) {
  if (t.type() != type) {
    call.fail(std::string("expected ") + what + " of dtype " + std::string(to_string(type)) +
              ", got " + std::string(to_string(t.type())));
  }
}

// What cuBLASLt's epilogue applies: its GELU is the tanh form through a fast
// tanh (about 5e-4 relative), within the 16-bit dtypes' tolerance but not
// float32's, so float32 and the erf form run the GELU after, exactly.
blas_activation activation_for(const op_call& call, const std::string& activation, dtype type) {
  if (activation == "none" || activation == "gelu_erf") return blas_activation::none;
  if (activation == "relu") return blas_activation::relu;
  if (activation == "gelu_tanh") {
    return type == dtype::float32 ? blas_activation::none : blas_activation::gelu_tanh;
  }
  call.fail("unknown activation '" + activation + "'");
}

// y = act(y + bias) in place, by an elementwise program: the epilogue when
// cuBLASLt has no algorithm with its own.
void bias_and_activation(const op_call& call, tensor& y, const tensor* bias,
                         const std::string& activation) {
  const ew_program program = bias_activation_program(y.type(), bias != nullptr, activation);
  const std::int64_t n = y.shape().back();
  const std::int64_t shape[] = {y.size() / n, n};
  ew_operand operands[2];
  operands[0] = {y.device_data(), y.type(), {n, 1}};
  if (bias != nullptr) operands[1] = {bias->device_data(), bias->type(), {0, 1}};
  const std::string interpreted = launch_fused_elementwise(
      program, operands, bias != nullptr ? 2 : 1, shape, 2, y.type(), y.device_data(), call.stream);
  call.backend.note_fallback(
      interpreted.empty() ? interpreted
                          : "bias and activation interpreted, not generated: " + interpreted);
}

// Inputs A, B, bias (N; may be omitted), residual (Y's shape; optional);
// attributes transA, transB, alpha, activation, shape (of Y, when a
// Reshape was folded in; else A's leading dimensions and N), and b_columns
// (N, when B is a weight padded with zeros to N' > N: [K, N'], or [N', K]
// with transB; the product is N wide, and may compute all N' columns).
// A MatMul's A of any rank is one [M, K] matrix: its rows are dense.
void fused_gemm(const op_call& call) {
  const tensor& a = call.in(0);
  const tensor& b = call.in(1);
  const tensor* bias = call.optional_in(2);
  const tensor* residual = call.optional_in(3);
  if (!is_float(a.type())) call.fail("unsupported dtype " + std::string(to_string(a.type())));
  require_type(call, b, a.type(), "B");
  if (bias != nullptr) require_type(call, *bias, a.type(), "the bias");
  const bool ta = call.n.get<std::int64_t>("transA", 0) != 0;
  const bool tb = call.n.get<std::int64_t>("transB", 0) != 0;
  if (a.rank() < 2 || b.rank() != 2 || (ta && a.rank() != 2)) {
    call.fail("expected A of rank >= 2 (2 when transposed) and a 2-D B");
  }
  const std::int64_t k = ta ? a.shape()[0] : a.shape().back();
  const std::int64_t m = a.size() / k;
  const std::int64_t b_columns = call.n.get<std::int64_t>("b_columns", 0);
  const std::int64_t b_n = tb ? b.shape()[0] : b.shape()[1];  // N of B as stored
  if (b_columns < 0 || b_columns > b_n) {
    call.fail("b_columns " + std::to_string(b_columns) + " needs a B of at least that many " +
              (tb ? "rows (transB)" : "columns") + ", got " + to_string(b.shape()));
  }
  const std::int64_t n = b_columns != 0 ? b_columns : b_n;
  if ((tb ? b.shape()[1] : b.shape()[0]) != k || (bias != nullptr && bias->size() != n) || k == 0) {
    call.fail("shapes do not match: A " + to_string(a.shape()) + ", B " + to_string(b.shape()) +
              (bias != nullptr ? ", bias " + to_string(bias->shape()) : std::string()));
  }
  shape_t shape(a.shape().begin(), a.shape().end() - 1);
  if (ta) shape = {a.shape()[1]};
  shape.push_back(n);
  shape = call.n.get<std::vector<std::int64_t>>("shape", shape);
  if (element_count(shape) != m * n || shape.empty() || shape.back() != n) {
    call.fail("output shape " + to_string(shape) + " is not [" + std::to_string(m) + ", " +
              std::to_string(n) + "]");
  }
  if (residual != nullptr) {
    require_type(call, *residual, a.type(), "the residual");
    if (residual->size() != m * n) call.fail("expected a residual of " + to_string(shape));
  }
  tensor y = call.allocate(a.type(), shape);
  const std::string activation = call.n.get<std::string>("activation", "none");
  bool no_algorithm = false;
  product p{.type = a.type(),
            .trans_a = ta,
            .trans_b = tb,
            .m = m,
            .n = n,
            .k = k,
            .a = a.device_data(),
            .b = b.device_data(),
            .y = y.device_data(),
            .alpha = call.n.get<float>("alpha", 1.0F),
            .beta = residual != nullptr ? 1.0F : 0.0F,
            .ldb = b_columns != 0 && !tb ? b.shape()[1] : 0,
            .b_columns_readable = b_n,
            .c = residual != nullptr ? residual->device_data() : nullptr,
            .bias = bias != nullptr ? bias->device_data() : nullptr,
            .activation = activation_for(call, activation, a.type()),
            .no_algorithm = &no_algorithm};
  run_product(call, p);
  if (no_algorithm) {  // the plain product, then the epilogue's work as a program
    p.bias = nullptr;
    p.activation = blas_activation::none;
    p.no_algorithm = nullptr;
    run_product(call, p);
    // A residual comes with no activation: (AB + C) + bias is the same sum.
    bias_and_activation(call, y, bias, activation);
  } else if (p.activation == blas_activation::none && activation != "none" &&
             activation != "relu") {
    bias_and_activation(call, y, nullptr, activation);  // the exact GELU, in place
  }
  call.outputs[0] = std::move(y);
}

// Inputs a, b (may be omitted), scale, bias (may be omitted); outputs y and
// optionally the sum a + b; attribute epsilon. Normalizes the last axis.
void fused_layer_norm(const op_call& call) {
  const tensor& a = call.in(0);
  const tensor* b = call.optional_in(1);
  const tensor& scale = call.in(2);
  const tensor* bias = call.optional_in(3);
  if (!is_float(a.type()) || a.rank() == 0) {
    call.fail("expected a float input of rank >= 1, got " + std::string(to_string(a.type())) + " " +
              to_string(a.shape()));
  }
  const std::int64_t n = a.shape().back();
  if (b != nullptr && (b->shape() != a.shape() || b->type() != a.type())) {
    call.fail("expected the residual of A's dtype and shape " + to_string(a.shape()));
  }
  for (const tensor* p : {&scale, bias}) {
    if (p != nullptr && (p->type() != a.type() || p->size() != n)) {
      call.fail("expected Scale and B of " + std::to_string(n) + " elements of A's dtype");
    }
  }
  if (call.outputs.size() > 1 && b == nullptr) call.fail("a sum output needs two inputs");
  tensor y = call.allocate(a.type(), a.shape());
  tensor sum;
  if (call.outputs.size() > 1) sum = call.allocate(a.type(), a.shape());
  launch_fused_layer_norm(a.type(), a.device_data(), b == nullptr ? nullptr : b->device_data(),
                          scale.device_data(), bias == nullptr ? nullptr : bias->device_data(),
                          y.device_data(), sum.on_device() ? sum.device_data() : nullptr,
                          n == 0 ? 0 : a.size() / n, n, call.n.get<float>("epsilon", 1e-5F),
                          call.stream);
  call.outputs[0] = std::move(y);
  if (call.outputs.size() > 1) call.outputs[1] = std::move(sum);
}

// Inputs broadcast to the output's shape (numpy rules); attributes program,
// constants, output_type (the engine's dtype number), shape (the output's).
void fused_elementwise(const op_call& call) {
  const ew_program program = ew_from_attributes(call.n);
  const auto out_type = static_cast<dtype>(call.n.get<std::int64_t>("output_type"));
  if (!is_float(out_type) && out_type != dtype::boolean) call.fail("unsupported output dtype");
  const shape_t out_shape = call.n.get<std::vector<std::int64_t>>("shape");
  std::vector<shape_t> shapes;
  for (std::size_t i = 0; i < call.n.inputs.size(); ++i) {
    const shape_t& s = call.in(i).shape();
    bool fits = s.size() <= out_shape.size();
    for (std::size_t d = 0; fits && d < s.size(); ++d) {
      const std::int64_t o = out_shape[out_shape.size() - s.size() + d];
      fits = s[d] == o || s[d] == 1;
    }
    if (!fits)
      call.fail("input " + to_string(s) + " does not broadcast to " + to_string(out_shape));
    shapes.push_back(s);
  }
  if (out_shape.size() > static_cast<std::size_t>(k_max_rank)) call.fail("rank over 8");
  std::vector<ew_operand> operands(shapes.size());
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    operands[k].data = call.in(k).device_data();
    operands[k].type = call.in(k).type();
    const shape_t strides = dense_strides(shapes[k]);
    const std::size_t lead = out_shape.size() - shapes[k].size();
    for (std::size_t d = 0; d < shapes[k].size(); ++d) {
      operands[k].stride[lead + d] = shapes[k][d] == 1 ? 0 : strides[d];
    }
  }
  tensor y = call.allocate(out_type, out_shape);
  const std::string interpreted = launch_fused_elementwise(
      program, operands.data(), static_cast<int>(operands.size()), out_shape.data(),
      static_cast<int>(out_shape.size()), out_type, y.device_data(), call.stream);
  call.backend.note_fallback(
      interpreted.empty() ? interpreted
                          : "elementwise program interpreted, not generated: " + interpreted);
  call.outputs[0] = std::move(y);
}

constexpr op_entry k_ops[] = {
    {"FusedElementwise", fused_elementwise, type_rule::any, k_fused_domain},
    {"FusedGemm", fused_gemm, type_rule::floats, k_fused_domain},
    {"FusedLayerNorm", fused_layer_norm, type_rule::floats, k_fused_domain},
};

}  // namespace

std::span<const op_entry> fused_ops() { return k_ops; }

}  // namespace coolbench::engine::cuda
