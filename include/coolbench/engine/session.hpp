/// @file
/// Running a model: the interface users of graph executors know.
///
///   auto s = coolbench::engine::session::load("model.onnx");   // backend "cpu"
///   s.set_input("A", a);
///   s.run();
///   const auto& c = s.output("C");
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/tensor.hpp"

namespace coolbench::engine {

class backend;

class session {
 public:
  /// Takes a loaded graph. Throws model_error "unsupported operator X (opset N)
  /// in node Y" when the backend cannot run a node, and invalid_argument for
  /// an unknown backend name.
  explicit session(graph g, std::string_view backend_name = "cpu");
  /// load_onnx + the constructor.
  [[nodiscard]] static session load(const std::filesystem::path& path,
                                    std::string_view backend_name = "cpu");
  ~session();
  session(session&&) noexcept;
  session& operator=(session&&) noexcept;
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  [[nodiscard]] const std::vector<value_info>& inputs() const noexcept { return m_graph.inputs; }
  [[nodiscard]] const std::vector<value_info>& outputs() const noexcept { return m_graph.outputs; }
  [[nodiscard]] std::string_view backend_name() const noexcept;

  /// Checks the name, dtype and shape against the model's declaration
  /// (binding symbolic dimensions) and says expected versus got when wrong.
  void set_input(const std::string& name, tensor value);
  /// Runs every node. Throws invalid_argument when an input is missing.
  void run();
  [[nodiscard]] const tensor& output(std::size_t index) const;
  [[nodiscard]] const tensor& output(const std::string& name) const;
  /// Drops inputs, outputs and intermediate tensors (the model stays).
  void release();

 private:
  graph m_graph;
  std::unique_ptr<backend> m_backend;
  std::map<std::string, tensor> m_inputs;
  std::map<std::string, tensor> m_outputs;
  std::map<std::string, std::int64_t> m_symbols;  // bound symbolic dimensions
};

}  // namespace coolbench::engine
