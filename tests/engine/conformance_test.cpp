// Conformance: every test_* folder under a root is loaded, run on a backend
// and compared with the expected outputs. One ctest test per root and backend
// (tests/engine/CMakeLists.txt), chosen through the environment:
//
//   COOLBENCH_CONFORMANCE_ROOT     the folder of test_* folders (default: Debian's
//                                  libonnx-testdata node tests, found at configure time)
//   COOLBENCH_CONFORMANCE_NAME     what the table calls the root (debian, pypi, reference)
//   COOLBENCH_CONFORMANCE_MODE     "node" (default) or "reference"
//   COOLBENCH_CONFORMANCE_BACKEND  "cpu" (default) or "cuda:N"; without a GPU
//                                  (or a CUDA build) a cuda run skips, saying why
//
// In node mode (ONNX's backend node tests: Debian's copy, and the newer one
// of the PyPI onnx package) cases the engine cannot take (an operator, dtype
// or attribute it does not support) are skipped with the reason; a supported
// case that computes a wrong result fails. In reference mode (coolbench's own
// models with onnxruntime's outputs, tools/make_reference_tests.py, and
// PyTorch's exports with PyTorch's outputs, tools/export_models.py) every
// case must run: a skip is a failure, and the tolerances are tighter. The one
// exception is a case whose folder holds expected_refusal.<cpu|cuda>.txt: the
// backend must then refuse it with exactly that message (an operator not there
// yet), and a case that runs instead is compared as usual and says so.
#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"
#if COOLBENCH_ENGINE_CUDA
#include "coolbench/core/error.hpp"
#include "coolbench/device.hpp"
#endif

namespace coolbench::engine {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The loader's converter is internal to the engine, so the test carries a
// minimal one; nullopt for a dtype the engine has no counterpart of.
std::optional<tensor> tensor_from_proto(const onnx::TensorProto& proto) {
  dtype type{};
  switch (proto.data_type()) {
    case onnx::TensorProto_DataType_FLOAT: type = dtype::float32; break;
    case onnx::TensorProto_DataType_FLOAT16: type = dtype::float16; break;
    case onnx::TensorProto_DataType_INT64: type = dtype::int64; break;
    case onnx::TensorProto_DataType_INT32: type = dtype::int32; break;
    case onnx::TensorProto_DataType_BOOL: type = dtype::boolean; break;
    default: return std::nullopt;
  }
  shape_t shape(proto.dims().begin(), proto.dims().end());
  const std::size_t element = size_of(type);
  std::vector<std::byte> bytes;
  const auto narrow = [&](const auto& field) {
    bytes.resize(static_cast<std::size_t>(field.size()) * element);
    for (int i = 0; i < field.size(); ++i) {
      const auto value = field.Get(i);
      std::memcpy(bytes.data() + static_cast<std::size_t>(i) * element, &value,
                  std::min(element, sizeof(value)));
    }
  };
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    bytes.resize(raw.size());
    std::memcpy(bytes.data(), raw.data(), raw.size());
  } else if (type == dtype::float32) {
    narrow(proto.float_data());
  } else if (type == dtype::int64) {
    narrow(proto.int64_data());
  } else {
    narrow(proto.int32_data());
  }
  return tensor(type, std::move(shape), std::move(bytes));
}

std::optional<tensor> load_tensor(const fs::path& path) {
  onnx::TensorProto proto;
  const std::string bytes = read_bytes(path);
  if (!proto.ParseFromString(bytes)) return std::nullopt;
  return tensor_from_proto(proto);
}

double element(const tensor& t, std::size_t i) {
  switch (t.type()) {
    case dtype::float32: return t.data<float>()[i];
    case dtype::int64: return static_cast<double>(t.data<std::int64_t>()[i]);
    case dtype::int32: return t.data<std::int32_t>()[i];
    case dtype::boolean: return t.data<bool>()[i] ? 1.0 : 0.0;
    case dtype::float16: {
      std::uint16_t bits = 0;
      std::memcpy(&bits, t.raw().data() + i * 2, 2);
      return half_to_float(bits);
    }
    case dtype::bfloat16: {
      std::uint16_t bits = 0;
      std::memcpy(&bits, t.raw().data() + i * 2, 2);
      return bfloat16_to_float(bits);
    }
  }
  return 0.0;
}

enum class mode { node, reference };

// |got - want| <= atol + rtol * |want| per element.
struct tolerance {
  double rtol;
  double atol;
};

// Node tests: ONNX's own tolerances for float32 (rtol 1e-3, atol 1e-7).
// Reference models: onnxruntime computes the same float32 ops in another order
// (blocked GEMM, fused softmax), so a whole model drifts by a few ulps per op;
// rtol 1e-4 with atol 1e-5 (for outputs near zero) allows that and nothing
// more. float16 is computed in float32 here but rounded at every step by the
// reference, so it gets a bound near float16's own precision (2^-10 ~ 1e-3
// per rounding, compounded over a model's layers in reference mode).
// Integers and bools compare exactly; NaN equals NaN.
tolerance tolerance_for(dtype type, mode m) {
  if (type == dtype::float16)
    return m == mode::reference ? tolerance{1e-2, 1e-2} : tolerance{1e-2, 1e-3};
  return m == mode::reference ? tolerance{1e-4, 1e-5} : tolerance{1e-3, 1e-7};
}

// "" when `got` matches; `largest` grows to the largest |got - want| of the
// finite float elements compared.
std::string compare(const tensor& got, const tensor& want, mode m, double& largest) {
  if (got.type() != want.type()) {
    return "dtype " + std::string(to_string(got.type())) + ", expected " +
           std::string(to_string(want.type()));
  }
  if (got.shape() != want.shape())
    return "shape " + to_string(got.shape()) + ", expected " + to_string(want.shape());
  const bool is_float = want.type() == dtype::float32 || want.type() == dtype::float16;
  const auto [rtol, atol] = tolerance_for(want.type(), m);
  for (std::size_t i = 0; i < static_cast<std::size_t>(want.size()); ++i) {
    const double g = element(got, i);
    const double w = element(want, i);
    bool ok = g == w;
    if (is_float && std::isfinite(g) && std::isfinite(w))
      largest = std::max(largest, std::abs(g - w));
    if (!ok && is_float) {
      ok = (std::isnan(g) && std::isnan(w)) ||
           (std::isfinite(w) && std::abs(g - w) <= atol + rtol * std::abs(w));
    }
    if (!ok) {
      std::ostringstream s;
      s << "element " << i << ": got " << g << ", expected " << w;
      return s.str();
    }
  }
  return {};
}

enum class outcome { pass, skip, fail };

struct result {
  outcome kind = outcome::pass;
  std::string reason;  // the skip category or the first mismatch
  std::string detail;  // for a skip: the engine's message
  double largest = 0;  // the largest |difference| over the outputs compared
};

// The op a test exercises: its only node's type, or "(multi-node)" for the
// expanded function bodies and other small graphs.
std::string op_label(const fs::path& model) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(read_bytes(model)) || proto.graph().node_size() == 0)
    return "(unreadable)";
  if (proto.graph().node_size() == 1) return proto.graph().node(0).op_type();
  return "(multi-node)";
}

// "cpu" or "cuda" for "cuda:N": the expected-refusal file's suffix.
std::string backend_kind(const std::string& backend) {
  return backend.starts_with("cuda") ? "cuda" : backend;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

result run_case(const fs::path& dir, mode m, const std::string& backend) {
  graph g;
  try {
    g = load_onnx(dir / "model.onnx");
  } catch (const model_error& e) {
    const std::string what = e.what();
    if (what.find("data type") != std::string::npos)
      return {outcome::skip, "unsupported dtype", what};
    return {outcome::skip, "other load error", what};
  }
  const std::vector<value_info> inputs = g.inputs;
  const std::vector<value_info> outputs = g.outputs;
  std::optional<session> s;
  try {
    s.emplace(std::move(g), backend);
  } catch (const model_error& e) {
    const std::string what = e.what();
    if (what.find("unsupported operator") != std::string::npos)
      return {outcome::skip, "unsupported op", what};
    return {outcome::skip, "other load error", what};
  }
  double largest = 0;
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_"))
      sets.push_back(entry.path());
  }
  std::sort(sets.begin(), sets.end());
  for (const auto& set : sets) {
    const std::string where = set.filename().string() + ": ";
    try {
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        const auto file = set / ("input_" + std::to_string(k) + ".pb");
        // An optional input the test leaves out.
        if (!fs::exists(file)) continue;
        auto t = load_tensor(file);
        if (!t) return {outcome::skip, "unsupported dtype", {}};
        s->set_input(inputs[k].name, std::move(*t));
      }
      s->run();
    } catch (const invalid_argument& e) {
      const std::string what = e.what();
      // Kernels refuse dtypes and attribute values they do not implement with
      // "unsupported ..." (supports() sees the node, not its inputs' dtypes).
      if (what.find("unsupported dtype") != std::string::npos)
        return {outcome::skip, "unsupported dtype at run time", what};
      if (what.find("unsupported") != std::string::npos)
        return {outcome::skip, "unsupported attribute", what};
      return {outcome::fail, where + what, {}};
    } catch (const std::exception& e) {
      return {outcome::fail, where + e.what(), {}};
    }
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const auto file = set / ("output_" + std::to_string(k) + ".pb");
      if (!fs::exists(file)) continue;
      auto want = load_tensor(file);
      if (!want) return {outcome::skip, "unsupported dtype", {}};
      const std::string mismatch = compare(s->output(outputs[k].name), *want, m, largest);
      if (!mismatch.empty())
        return {outcome::fail, where + "output '" + outputs[k].name + "' " + mismatch, {}};
    }
  }
  return {outcome::pass, {}, {}, largest};
}

std::string environment(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : std::move(fallback);
}

// Why this backend cannot run here, or "" when it can.
std::string backend_missing(const std::string& backend) {
  if (backend == "cpu") return {};
#if COOLBENCH_ENGINE_CUDA
  try {
    if (device::device::count() > 0) return {};
  } catch (const error&) {
  }
  return "no GPU here: the " + backend + " backend cannot run";
#else
  return "this build has no CUDA backend (COOLBENCH_CUDA=OFF or no CUDA compiler)";
#endif
}

// A case with an expected refusal: refused with exactly that message passes
// (as a skip), refused otherwise fails; one that runs is judged as usual.
result with_expected_refusal(const fs::path& dir, const std::string& backend, result r,
                             std::vector<std::string>& notes) {
  const fs::path file = dir / ("expected_refusal." + backend_kind(backend) + ".txt");
  if (!fs::exists(file)) return r;
  const std::string expected = trimmed(read_bytes(file));
  const std::string name = dir.filename().string();
  if (r.kind != outcome::skip) {
    notes.push_back(name + ": ran although " + file.filename().string() +
                    " expects a refusal; delete that file");
    return r;
  }
  if (trimmed(r.detail) == expected) {
    notes.push_back(name + ": refused as expected: " + expected);
    return {outcome::skip, "refused as expected", r.detail};
  }
  return {outcome::fail, "refused with '" + r.detail + "', expected '" + expected + "'", {}};
}

// The results of a root's cases, by operator (node mode) or model (reference mode).
struct tally {
  struct counts {
    int pass = 0, skip = 0, fail = 0;
    double largest = 0;  // max |difference| of the passing cases' outputs
  };
  std::map<std::string, counts> by_label;
  std::map<std::string, int> skip_reasons;
  std::vector<std::string> failures;
  std::vector<std::string> odd_skips;
  std::vector<std::string> notes;
  counts total;

  void add(const std::string& label, const std::string& case_name, const result& r) {
    counts& c = by_label[label];
    switch (r.kind) {
      case outcome::pass:
        ++c.pass, ++total.pass;
        c.largest = std::max(c.largest, r.largest);
        break;
      case outcome::skip:
        ++c.skip, ++total.skip;
        ++skip_reasons[r.reason];
        // Op and dtype skips are self-explanatory from the table; the rest say why.
        if (r.reason == "other load error" || r.reason == "unsupported attribute" ||
            r.reason == "unsupported dtype at run time")
          odd_skips.push_back(case_name + ": " + r.detail);
        break;
      case outcome::fail:
        ++c.fail, ++total.fail;
        failures.push_back(case_name + ": " + r.reason);
        break;
    }
  }

  [[nodiscard]] std::string table(const std::string& name, mode m, std::size_t cases) const {
    std::ostringstream out;
    out << (m == mode::reference ? "model  " : "op type")
        << "                             pass  skip  fail"
        << (m == mode::reference ? "  max |difference|" : "") << "\n";
    for (const auto& [label, c] : by_label) {
      out << label << std::string(label.size() < 34 ? 34 - label.size() : 1, ' ');
      for (const int n : {c.pass, c.skip, c.fail}) {
        const std::string v = std::to_string(n);
        out << std::string(6 - std::min<std::size_t>(v.size(), 5), ' ') << v;
      }
      if (m == mode::reference && c.pass > 0) out << "  " << c.largest;
      out << "\n";
    }
    out << name << " total: " << total.pass << " pass, " << total.skip << " skip, " << total.fail
        << " fail of " << cases << "\nskipped:";
    for (const auto& [reason, n] : skip_reasons) out << " " << reason << " " << n << ";";
    out << "\n";
    if (!odd_skips.empty()) {
      out << "skipped for another reason than the op or dtype:\n";
      for (const auto& f : odd_skips) out << "  " << f << "\n";
    }
    for (const auto& n : notes) out << "note: " << n << "\n";
    if (!failures.empty()) {
      out << "failing:\n";
      for (const auto& f : failures) out << "  " << f << "\n";
    }
    return out.str();
  }
};

TEST(conformance, root) {
  const fs::path root = environment("COOLBENCH_CONFORMANCE_ROOT", COOLBENCH_ONNX_NODE_TESTS);
  const std::string name = environment("COOLBENCH_CONFORMANCE_NAME", "debian");
  const std::string mode_name = environment("COOLBENCH_CONFORMANCE_MODE", "node");
  ASSERT_TRUE(mode_name == "node" || mode_name == "reference")
      << "COOLBENCH_CONFORMANCE_MODE is '" << mode_name << "'; expected node or reference";
  const mode m = mode_name == "reference" ? mode::reference : mode::node;
  const std::string backend = environment("COOLBENCH_CONFORMANCE_BACKEND", "cpu");
  if (const std::string missing = backend_missing(backend); !missing.empty())
    GTEST_SKIP() << "the " << name << " root on " << backend << ": " << missing;
  if (root.empty() || !fs::is_directory(root)) {
    GTEST_SKIP() << "no test data for the " << name << " root at '" << root.string()
                 << "' (debian: the Debian package libonnx-testdata; pypi and reference: "
                    ".venv/, which scripts/setup.sh makes, then reconfigure)";
  }
  std::cout << "root " << name << " (" << mode_name << " mode) on " << backend << ": "
            << root.string() << "\n";
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_"))
      cases.push_back(entry.path());
  }
  std::sort(cases.begin(), cases.end());
  ASSERT_FALSE(cases.empty()) << "no test_* folders under " << root;

  tally t;
  for (const auto& dir : cases) {
    result r = with_expected_refusal(dir, backend, run_case(dir, m, backend), t.notes);
    // Whole models must all run: a skip there is a gap, not a choice.
    if (m == mode::reference && r.kind == outcome::skip && r.reason != "refused as expected")
      r = {outcome::fail, "skipped (" + r.reason + "): " + r.detail, {}};
    // Reference cases are whole models: the folder names them better than "(multi-node)".
    t.add(m == mode::reference ? dir.filename().string() : op_label(dir / "model.onnx"),
          dir.filename().string(), r);
  }
  std::cout << t.table(name, m, cases.size());
  EXPECT_EQ(t.total.fail, 0)
      << (m == mode::reference
              ? "whole models fail or differ from their reference outputs; see the list above"
              : "supported operators compute wrong results; see the list above");
}

}  // namespace
}  // namespace coolbench::engine
