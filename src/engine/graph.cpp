#include "coolbench/engine/graph.hpp"

namespace coolbench::engine {

std::string node::describe() const {
  return "node '" + (name.empty() ? std::string("(unnamed)") : name) + "' (" + op_type + ")";
}

}  // namespace coolbench::engine
