// Workloads by name, as the command line gives them.
#include <string>
#include <string_view>

#include "coolbench/measure/workload.hpp"

namespace coolbench::measure {

#ifndef COOLBENCH_MEASURE_HAVE_ENGINE
std::unique_ptr<workload> make_model_workload(const std::filesystem::path& model,
                                              std::string_view /*backend*/,
                                              const std::map<std::string, std::int64_t>&
                                              /*dimensions*/,
                                              bool /*cuda_graph*/) {
  throw not_available("cannot run the model '" + model.string() +
                      "': this coolbench was built without the ONNX engine "
                      "(COOLBENCH_ENGINE=OFF); rebuild with -DCOOLBENCH_ENGINE=ON");
}
#endif

#ifndef COOLBENCH_MEASURE_HAVE_CUDA
std::unique_ptr<workload> make_gemm_chain(const gemm_chain_spec& spec, int /*device*/) {
  validate(spec);
  throw not_available("cannot run " + to_string(spec) +
                      ": this coolbench was built without CUDA (no nvcc, or "
                      "COOLBENCH_CUDA=OFF); rebuild with the CUDA toolkit");
}
#endif

std::unique_ptr<workload> make_workload(std::string_view name, int device) {
  if (name.starts_with("gemm:") || name == "gemm") {
    return make_gemm_chain(parse_gemm_chain(name), device);
  }
  if (name.ends_with(".onnx")) return make_model_workload(std::filesystem::path(name));
  throw invalid_argument("unknown workload '" + std::string(name) +
                         "': give a GEMM chain, gemm:DTYPE:M:N:K[:COUNT] (e.g. "
                         "gemm:fp16:128:2304:768:4), or the path of an .onnx model");
}

}  // namespace coolbench::measure
