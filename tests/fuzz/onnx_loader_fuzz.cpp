// libFuzzer target for the ONNX loader (issue "Engine I" §7): arbitrary bytes
// go through parse_onnx and, when they load, into a session, whose creation
// checks every node against the backend. The loader and the session document
// two exceptions for bad input, model_error and invalid_argument; those are
// the expected answers. Anything else (a crash, an AddressSanitizer or
// UndefinedBehaviorSanitizer report, another exception escaping, a hang or
// running out of memory) is a finding. Run by scripts/test.sh; see
// docs/development.md ("The fuzzer").
#include <cstddef>
#include <cstdint>
#include <span>

#include "coolbench/core/error.hpp"
#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace coolbench;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    // External data is looked up beside the model; a folder that does not
    // exist keeps the fuzzer from reading whatever files a mutation names.
    engine::graph g = engine::parse_onnx(bytes, "/nonexistent/coolbench-fuzz", "fuzz input");
    const engine::session s(std::move(g));
  } catch (const engine::model_error&) {
  } catch (const invalid_argument&) {
  }
  return 0;
}
