// Parity cases of the convolutional-network operators and GatherElements
// (the suite runs in cuda_parity_test.cpp), and the CUDA backend's report of
// an index out of range, which only the device sees.
#include <gtest/gtest.h>

#include <string>

#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#include "engine/backends/cuda/backend.hpp"
#include "engine/cuda_parity_cases.hpp"
#include "engine/gpu_present.hpp"

namespace coolbench::engine::parity {
namespace {

void add_conv(suite& s) {
  s.add("Conv 3x3 pads bias", make_node("Conv", 3, 1, {{"pads", int_list{1, 1, 1, 1}}}),
        {{f, {2, 3, 9, 8}}, {f, {4, 3, 3, 3}}, {f, {4}}}, k_floats);
  s.add("Conv grouped strided dilated asymmetric",
        make_node("Conv", 3, 1,
                  {{"group", std::int64_t{2}},
                   {"pads", int_list{0, 1, 2, 0}},
                   {"strides", int_list{2, 3}},
                   {"dilations", int_list{2, 1}}}),
        {{f, {1, 4, 11, 7}}, {f, {6, 2, 3, 2}}, {f, {6}}}, k_floats);
  s.add("Conv depthwise SAME_UPPER stride 2",
        make_node("Conv", 2, 1,
                  {{"group", std::int64_t{8}},
                   {"auto_pad", std::string("SAME_UPPER")},
                   {"strides", int_list{2, 2}}}),
        {{f, {1, 8, 10, 9}}, {f, {8, 1, 3, 3}}}, k_floats);
  s.add("Conv 1x1 no bias", make_node("Conv", 2, 1), {{f, {3, 16, 7, 6}}, {f, {32, 16, 1, 1}}},
        k_floats);
  s.add("Conv 1-D", make_node("Conv", 3, 1, {{"pads", int_list{2, 2}}, {"dilations", int_list{2}}}),
        {{f, {2, 4, 30}}, {f, {5, 4, 3}}, {f, {5}}}, k_floats);
  s.add("Conv 3-D", make_node("Conv", 2, 1, {{"pads", int_list{1, 0, 1, 1, 0, 1}}}),
        {{f, {1, 2, 5, 6, 4}}, {f, {3, 2, 2, 3, 2}}}, k_floats);
  s.add("Conv VALID kernel_shape",
        make_node("Conv", 2, 1,
                  {{"auto_pad", std::string("VALID")}, {"kernel_shape", int_list{3, 3}}}),
        {{f, {1, 2, 6, 5}}, {f, {2, 2, 3, 3}}}, k_floats);
  s.add("Conv empty batch", make_node("Conv", 2, 1), {{f, {0, 3, 5, 5}}, {f, {2, 3, 3, 3}}},
        k_floats);
  s.add("Conv large", make_node("Conv", 3, 1, {{"pads", int_list{1, 1, 1, 1}}}),
        {{f, {2, 64, 28, 28}}, {f, {64, 64, 3, 3}}, {f, {64}}}, k_floats);
  s.add("Conv stem 7x7 stride 2",
        make_node("Conv", 2, 1, {{"pads", int_list{3, 3, 3, 3}}, {"strides", int_list{2, 2}}}),
        {{f, {1, 3, 64, 64}}, {f, {16, 3, 7, 7}}}, k_floats);
  // Conv as products (conv_gemm.cpp, groups of >= 8 maps and rows): a patch embedding with 25
  // positions (column rows padded to 16 bytes), groups of a 3x3 and of a 1x1 kernel with bias,
  // 1-D and 3-D. The cases above with 16 or more maps take that path too.
  s.add("Conv patchify stride 8 bias", make_node("Conv", 3, 1, {{"strides", int_list{8, 8}}}),
        {{f, {2, 3, 40, 40}}, {f, {24, 3, 8, 8}}, {f, {24}}}, k_floats);
  s.add("Conv as products grouped 3x3 bias",
        make_node("Conv", 3, 1, {{"group", std::int64_t{2}}, {"pads", int_list{1, 0, 1, 2}}}),
        {{f, {2, 16, 9, 10}}, {f, {16, 8, 3, 3}}, {f, {16}}}, k_floats);
  s.add("Conv as products grouped 1x1 bias", make_node("Conv", 3, 1, {{"group", std::int64_t{2}}}),
        {{f, {3, 32, 5, 7}}, {f, {16, 16, 1, 1}}, {f, {16}}}, k_floats);
  s.add("Conv as products 1-D strided",
        make_node("Conv", 3, 1, {{"pads", int_list{2, 2}}, {"strides", int_list{2}}}),
        {{f, {2, 8, 33}}, {f, {12, 8, 5}}, {f, {12}}}, k_floats);
  s.add("Conv as products 3-D", make_node("Conv", 3, 1, {{"pads", int_list{1, 1, 1, 1, 1, 1}}}),
        {{f, {1, 4, 6, 5, 7}}, {f, {8, 4, 3, 3, 3}}, {f, {8}}}, k_floats);
}

void add_pools(suite& s) {
  s.add("MaxPool 3x3 stride 2 pads",
        make_node("MaxPool", 1, 1,
                  {{"kernel_shape", int_list{3, 3}},
                   {"strides", int_list{2, 2}},
                   {"pads", int_list{1, 1, 1, 1}}}),
        {{f, {2, 3, 17, 16}}}, k_floats);
  s.add("MaxPool ceil dilations",
        make_node("MaxPool", 1, 1,
                  {{"kernel_shape", int_list{3, 2}},
                   {"strides", int_list{2, 2}},
                   {"dilations", int_list{1, 2}},
                   {"ceil_mode", std::int64_t{1}}}),
        {{f, {1, 2, 9, 10}}}, k_floats);
  s.add("MaxPool 1-D",
        make_node(
            "MaxPool", 1, 1,
            {{"kernel_shape", int_list{4}}, {"strides", int_list{3}}, {"pads", int_list{1, 2}}}),
        {{f, {2, 3, 20}}}, k_floats);
  s.add("MaxPool 3-D", make_node("MaxPool", 1, 1, {{"kernel_shape", int_list{2, 2, 2}}}),
        {{f, {1, 2, 4, 5, 6}}}, k_floats);
  s.add("MaxPool empty", make_node("MaxPool", 1, 1, {{"kernel_shape", int_list{2, 2}}}),
        {{f, {0, 3, 8, 8}}}, k_floats);
  s.add("AveragePool pads",
        make_node("AveragePool", 1, 1,
                  {{"kernel_shape", int_list{3, 3}},
                   {"strides", int_list{2, 2}},
                   {"pads", int_list{1, 1, 1, 1}}}),
        {{f, {2, 3, 9, 9}}}, k_floats);
  s.add("AveragePool count_include_pad ceil",
        make_node("AveragePool", 1, 1,
                  {{"kernel_shape", int_list{3, 3}},
                   {"strides", int_list{2, 2}},
                   {"pads", int_list{1, 1, 1, 1}},
                   {"ceil_mode", std::int64_t{1}},
                   {"count_include_pad", std::int64_t{1}}}),
        {{f, {1, 2, 8, 8}}}, k_floats);
  s.add("AveragePool SAME_LOWER",
        make_node("AveragePool", 1, 1,
                  {{"kernel_shape", int_list{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}}),
        {{f, {1, 3, 7, 7}}}, k_floats);
  for (const std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    s.add(op, make_node(op, 1, 1), {{f, {2, 64, 7, 7}}}, k_floats);
    s.add(op + " 1-D", make_node(op, 1, 1), {{f, {3, 4, 50}}}, k_floats);
    s.add(op + " empty plane", make_node(op, 1, 1), {{f, {2, 3, 0, 4}}}, k_floats);
    s.add(op + " large", make_node(op, 1, 1), {{f, {1, 4, 300, 300}}}, k_floats);
  }
  s.add("BatchNormalization", make_node("BatchNormalization", 5, 1, {{"epsilon", 1e-3F}}),
        {{f, {2, 16, 5, 7}}, {f, {16}}, {f, {16}}, {f, {16}}, {f, {16}, values::positive}},
        k_floats);
  s.add("BatchNormalization rank 2", make_node("BatchNormalization", 5, 1),
        {{f, {4, 10}}, {f, {10}}, {f, {10}}, {f, {10}}, {f, {10}, values::positive}}, k_floats);
  s.add("BatchNormalization large", make_node("BatchNormalization", 5, 1),
        {{f, {8, 64, 28, 28}}, {f, {64}}, {f, {64}}, {f, {64}}, {f, {64}, values::positive}},
        k_floats);
}

void add_gather_elements(suite& s) {
  const std::vector<dtype> all = {dtype::float32, dtype::float16, dtype::bfloat16,
                                  dtype::int64,   dtype::int32,   dtype::boolean};
  s.add("GatherElements", make_node("GatherElements", 2, 1, {{"axis", std::int64_t{1}}}),
        {{f, {3, 10, 4}}, {dtype::int64, {3, 6, 4}, values::indices, {}, 10}}, all);
  s.add("GatherElements int32 last axis",
        make_node("GatherElements", 2, 1, {{"axis", std::int64_t{-1}}}),
        {{f, {5, 16}}, {dtype::int32, {5, 16}, values::indices, {}, 16}}, all);
  s.add("GatherElements indices smaller than data",
        make_node("GatherElements", 2, 1, {{"axis", std::int64_t{1}}}),
        {{f, {4, 6, 5}}, {dtype::int64, {2, 9, 3}, values::indices, {}, 6}}, all);
  s.add("GatherElements empty", make_node("GatherElements", 2, 1),
        {{f, {3, 4}}, {dtype::int64, {0, 4}, values::indices, {}, 3}}, all);
  s.add("GatherElements large", make_node("GatherElements", 2, 1),
        {{f, {512, 768}}, {dtype::int64, {300, 768}, values::indices, {}, 512}}, k_floats);
}

}  // namespace

void add_nn(suite& s) {
  add_conv(s);
  add_pools(s);
  add_gather_elements(s);
}

namespace {

// Runs `n` on the GPU with host inputs; the error surfaces when the output is
// copied out (synchronize), naming the node.
void expect_device_error(cuda::cuda_backend& gpu, const node& n, const std::vector<tensor>& host,
                         const std::string& fragment) {
  std::vector<tensor> device;
  std::vector<const tensor*> inputs;
  for (const tensor& t : host) device.push_back(gpu.copy_in(t));
  for (const tensor& t : device) inputs.push_back(&t);
  std::vector<tensor> out(1);
  gpu.run(n, inputs, out);
  try {
    static_cast<void>(gpu.copy_out(out[0]));
    ADD_FAILURE() << n.op_type << " with an index out of range gave no error";
  } catch (const invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(n.describe()), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
    EXPECT_NE(what.find("found on the device"), std::string::npos) << what;
  }
}

tensor int64s(shape_t shape, const std::vector<std::int64_t>& values) {
  tensor t(dtype::int64, std::move(shape));
  std::copy(values.begin(), values.end(), t.data<std::int64_t>().begin());
  return t;
}

TEST(cuda_device_checks, an_index_out_of_range_is_an_error_after_the_run) {
  COOLBENCH_REQUIRE_GPU("the CUDA backend");
  cuda::cuda_backend gpu(0);
  const tensor data(dtype::float32, {3, 4});
  expect_device_error(gpu, make_node("GatherElements", 2, 1), {data, int64s({1, 2}, {0, 3})},
                      "expected indices in [-3, 2] on axis 0");
  expect_device_error(gpu, make_node("Gather", 2, 1, {{"axis", std::int64_t{1}}}),
                      {data, int64s({2}, {1, -5})}, "expected indices in [-4, 3]");
  expect_device_error(gpu, make_node("GatherND", 2, 1), {data, int64s({1, 2}, {2, 4})},
                      "expected indices within the axes of data [3, 4]");
  // The flag was cleared: a valid gather afterwards runs and copies out.
  std::vector<tensor> device = {gpu.copy_in(data), gpu.copy_in(int64s({1, 2}, {2, -3}))};
  const std::vector<const tensor*> inputs = {&device[0], &device[1]};
  std::vector<tensor> out(1);
  gpu.run(make_node("GatherElements", 2, 1), inputs, out);
  EXPECT_EQ(gpu.copy_out(out[0]).shape(), (shape_t{1, 2}));
  gpu.end_run();
  gpu.release();
}

}  // namespace
}  // namespace coolbench::engine::parity
