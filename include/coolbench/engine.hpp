/// @file
/// Umbrella header of the engine: tensors, the graph IR, ONNX loading, graph
/// passes, sessions.
#pragma once

#include "coolbench/engine/graph.hpp"
#include "coolbench/engine/model.hpp"
#include "coolbench/engine/passes.hpp"
#include "coolbench/engine/session.hpp"
#include "coolbench/engine/tensor.hpp"
