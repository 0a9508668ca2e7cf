// Times one model on the engine's CPU backend, for bench/engine_cpu.py, which
// runs it beside onnxruntime and prints the comparison. One process per
// measurement, so earlier work does not colour the figure.
//
//   engine_cpu MODEL.onnx --ids FILE --batch B --seq S [--warmup N] [--runs N]
//              [--output FILE]
//
// FILE holds B*S little-endian int64 token ids for the model's one input.
// Prints one JSON object: load seconds, first-run and per-run milliseconds.
// --output writes output 0 as raw float32, for the driver's cross-check.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "coolbench/engine/session.hpp"

namespace {

using steady = std::chrono::steady_clock;
namespace engine = coolbench::engine;

struct options {
  std::string model;
  std::string ids;
  std::string output;
  std::int64_t batch = 1;
  std::int64_t seq = 128;
  int warmup = 3;
  int runs = 20;
};

[[noreturn]] void usage(const std::string& message) {
  std::cerr << "engine_cpu: " << message
            << "\nusage: engine_cpu MODEL.onnx --ids FILE --batch B --seq S [--warmup N] "
               "[--runs N] [--output FILE]\n";
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--ids") {
        o.ids = value();
      } else if (arg == "--output") {
        o.output = value();
      } else if (arg == "--batch") {
        o.batch = std::stoll(value());
      } else if (arg == "--seq") {
        o.seq = std::stoll(value());
      } else if (arg == "--warmup") {
        o.warmup = std::stoi(value());
      } else if (arg == "--runs") {
        o.runs = std::stoi(value());
      } else if (o.model.empty() && !arg.starts_with("--")) {
        o.model = arg;
      } else {
        usage("unexpected argument: " + arg);
      }
    } catch (const std::logic_error&) {
      usage(arg + " takes a number");
    }
  }
  if (o.model.empty() || o.ids.empty()) usage("a model and --ids are required");
  if (o.batch < 1 || o.seq < 1 || o.warmup < 0 || o.runs < 1) usage("values out of range");
  return o;
}

double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int run(const options& o) {
  engine::tensor ids(engine::dtype::int64, {o.batch, o.seq});
  {
    std::ifstream in(o.ids, std::ios::binary);
    auto data = ids.data<std::int64_t>();
    in.read(reinterpret_cast<char*>(data.data()),  // NOLINT: raw file of int64
            static_cast<std::streamsize>(data.size_bytes()));
    if (!in) usage("cannot read " + std::to_string(data.size_bytes()) + " bytes from " + o.ids);
  }
  const auto load_start = steady::now();
  engine::session session = engine::session::load(o.model);
  const double load_ms = ms_between(load_start, steady::now());
  if (session.inputs().size() != 1) usage("the model must have one input (token ids)");
  session.set_input(session.inputs()[0].name, ids);

  const auto first_start = steady::now();
  session.run();
  const double first_ms = ms_between(first_start, steady::now());
  for (int i = 1; i < o.warmup; ++i) session.run();
  std::vector<double> runs;
  for (int i = 0; i < o.runs; ++i) {
    const auto start = steady::now();
    session.run();
    runs.push_back(ms_between(start, steady::now()));
  }
  if (!o.output.empty()) {
    const engine::tensor& out = session.output(0);
    std::vector<float> values(static_cast<std::size_t>(out.size()));
    if (out.type() == engine::dtype::float32) {
      std::ranges::copy(out.data<float>(), values.begin());
    } else if (out.type() == engine::dtype::float16) {
      const auto* bits = reinterpret_cast<const std::uint16_t*>(out.raw().data());  // NOLINT
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = engine::half_to_float(bits[i]);
    } else {
      usage("output 0 is neither float32 nor float16");
    }
    std::ofstream file(o.output, std::ios::binary);
    file.write(reinterpret_cast<const char*>(values.data()),  // NOLINT: raw float32 file
               static_cast<std::streamsize>(values.size() * sizeof(float)));
  }
  nlohmann::json result{{"engine", "coolbench-cpu"},
                        {"backend", session.backend_description()},
                        {"load_ms", load_ms},
                        {"first_run_ms", first_ms},
                        {"runs_ms", runs}};
  std::cout << result.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "engine_cpu: " << e.what() << "\n";
    return 1;
  }
}
