/// @file
/// Running a model: the interface users of graph executors know.
///
///   auto s = coolbench::engine::session::load("model.onnx");   // backend "cpu"
///   s.set_input("A", a);
///   s.run();
///   const auto& c = s.output("C");
///
/// When a session is created it infers shapes, folds the constant shape
/// subgraphs and drops dead nodes (passes.hpp), for the symbolic dimensions
/// bound in session_options; run() does it again when the inputs bind them
/// to other values.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/passes.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine {

class backend;

struct session_options {
  /// Values of symbolic dimensions known before any input is set
  /// ({"batch", 1}, {"sequence", 128}). The session specializes its plan for
  /// them when it is created; inputs that bind them to other values are
  /// still accepted, and make run() specialize again.
  symbol_bindings dimensions;
};

class session {
 public:
  /// Takes a loaded graph. Throws model_error "unsupported operator X (opset N)
  /// in node Y" when the backend cannot run a node, and invalid_argument for
  /// an unknown backend name.
  /// Also throws model_error when shapes are inconsistent (passes.hpp).
  explicit session(graph g, std::string_view backend_name = "cpu");
  session(graph g, session_options options, std::string_view backend_name = "cpu");
  /// load_onnx + the constructor.
  [[nodiscard]] static session load(const std::filesystem::path& path,
                                    std::string_view backend_name = "cpu");
  [[nodiscard]] static session load(const std::filesystem::path& path, session_options options,
                                    std::string_view backend_name = "cpu");
  ~session();
  session(session&&) noexcept;
  session& operator=(session&&) noexcept;
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  [[nodiscard]] const std::vector<value_info>& inputs() const noexcept { return m_graph.inputs; }
  [[nodiscard]] const std::vector<value_info>& outputs() const noexcept { return m_graph.outputs; }
  [[nodiscard]] std::string_view backend_name() const noexcept;
  /// The backend and what it runs on, for reports: "cpu (OpenBLAS SkylakeX, 2 threads)".
  [[nodiscard]] std::string backend_description() const;
  /// Nodes the current plan runs: the model's, less those folded into
  /// constants and those no output needs.
  [[nodiscard]] std::size_t node_count() const noexcept;

  /// Checks the name, dtype and shape against the model's declaration
  /// (binding symbolic dimensions) and says expected versus got when wrong.
  void set_input(const std::string& name, tensor value);
  /// Runs the plan's nodes, first specializing it again when the inputs bind
  /// symbolic dimensions to values it was not made for. Throws
  /// invalid_argument when an input is missing or the shapes it gives are
  /// inconsistent.
  void run();
  [[nodiscard]] const tensor& output(std::size_t index) const;
  [[nodiscard]] const tensor& output(const std::string& name) const;
  /// Drops inputs, outputs and intermediate tensors (the model stays).
  void release();

 private:
  struct plan;
  /// Makes m_plan for these bindings: passes over m_graph, then the check
  /// that the backend runs every node left. Throws model_error.
  void specialize(const symbol_bindings& bound);

  graph m_graph;  // as loaded; plans borrow its initializers
  session_options m_options;
  std::unique_ptr<backend> m_backend;
  std::unique_ptr<plan> m_plan;
  std::map<std::string, tensor> m_inputs;
  std::map<std::string, tensor> m_outputs;
  symbol_bindings m_symbols;  // bound by the inputs set so far
};

}  // namespace coolbench::engine
