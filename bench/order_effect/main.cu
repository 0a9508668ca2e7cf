// bench/order_effect: the hidden order effect of docs/perf/hidden-state.md, with the
// project's own code. A GPT-2-shaped fp16 cuBLAS chain replayed as a CUDA graph (the
// victim), disturbed by three bf16 8192^3 GEMMs or one kernel with 200 KB of dynamic
// shared memory (48 and 100 KB as controls), then measured with each isolation: none,
// release + re-acquire, touch (another process makes a context and exits), a fresh
// process; `bisect` measures the victim in each form between its own and the reference
// program's (victim_form) to find what makes the reference sensitive. Every figure is the median
// over --repeats repeats, each itself the median of the replays.
//   order_effect [--ordinal N] [--part all|survey|bisect|kernels|sentinel|isolation|detect|profile]
//                [--repeats R] [--replays N] [--victim
//                fp16|fp32[:lease|none|library[:lease|blocking[:FORM]]]] [--disturb-on
//                legacy|lease|raw]
//                [--json PATH]
#include <cuda_runtime.h>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "coolbench/telemetry.hpp"
#include "experiments.hpp"

namespace {

using namespace order_effect;

struct options {
  int ordinal = 0;
  std::string part = "all";
  int repeats = 5;
  int replays = 200;
  std::string victim = "fp16:lease:blocking";
  std::string json_path;
  std::string child;
  std::string disturb_on = "legacy";
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "order_effect: %s\nusage: order_effect [--ordinal N] "
               "[--part all|survey|bisect|kernels|sentinel|isolation|detect|profile] [--repeats R] "
               "[--replays N] [--victim fp16|fp32[:lease|none|library[:lease|blocking[:FORM]]]] "
               "[--disturb-on legacy|lease|raw] [--json PATH]\n"
               "       order_effect --child-disturb smem100|smem200|gemms [--ordinal N]\n"
               "FORM: reference, or nocopy, wide, inplace, batch10, sync, rawmem joined by '+'\n",
               why.c_str());
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--ordinal")
      o.ordinal = std::atoi(value().c_str());
    else if (a == "--part")
      o.part = value();
    else if (a == "--repeats")
      o.repeats = std::max(1, std::atoi(value().c_str()));
    else if (a == "--replays")
      o.replays = std::max(10, std::atoi(value().c_str()));
    else if (a == "--victim")
      o.victim = value();
    else if (a == "--json")
      o.json_path = value();
    else if (a == "--disturb-on")
      o.disturb_on = value();
    else if (a == "--child-measure")
      o.child = "measure:" + value();
    else if (a == "--child-driver-only")
      o.child = "driver-only";
    else if (a == "--child-disturb")
      o.child = "disturb:" + value();
    else
      usage("unexpected argument: " + a);
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// One markdown table per experiment: rows, columns in first-seen order; each
/// cell the median over repeats, its change against the row's first column and n.
void print_tables(const std::vector<figure>& figures) {
  std::vector<std::string> tables;
  for (const auto& f : figures)
    if (std::find(tables.begin(), tables.end(), f.table) == tables.end()) tables.push_back(f.table);
  for (const auto& t : tables) {
    std::vector<std::string> rows;
    std::vector<std::string> cols;
    std::map<std::pair<std::string, std::string>, const figure*> cell;
    for (const auto& f : figures) {
      if (f.table != t) continue;
      if (std::find(rows.begin(), rows.end(), f.row) == rows.end()) rows.push_back(f.row);
      if (std::find(cols.begin(), cols.end(), f.column) == cols.end()) cols.push_back(f.column);
      cell[{f.row, f.column}] = &f;
    }
    std::printf("### %s\n\n| |", t.c_str());
    for (const auto& c : cols) std::printf(" %s |", c.c_str());
    std::printf("\n|---|");
    for (std::size_t i = 0; i < cols.size(); ++i) std::printf("---|");
    std::printf("\n");
    for (const auto& r : rows) {
      std::printf("| %s |", r.c_str());
      const auto first = cell.find({r, cols[0]});
      for (const auto& c : cols) {
        const auto it = cell.find({r, c});
        if (it == cell.end()) {
          std::printf(" |");
          continue;
        }
        const auto& values = it->second->values;
        if (c == "flagged") {  // a count, not a figure
          int flagged = 0;
          for (const double v : values) flagged += v > 0 ? 1 : 0;
          std::printf(" %d of %zu |", flagged, values.size());
          continue;
        }
        const double m = median(values);
        std::printf(" %.4f %s", m, it->second->unit.c_str());
        if (c != cols[0] && first != cell.end() && it->second->unit == "ms")
          std::printf(" (%+.1f %%)", 100.0 * (m / median(first->second->values) - 1));
        std::printf(" n=%zu |", it->second->values.size());
      }
      std::printf("\n");
    }
    std::printf("\n");
  }
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

std::string self_path() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw coolbench::error("cannot find this program's path (/proc/self/exe)");
  path[n] = '\0';
  return path;
}

int run(const options& o) {
  const victim_config config = parse_victim(o.victim);
  if (o.disturb_on != "legacy" && o.disturb_on != "lease" && o.disturb_on != "raw")
    usage("--disturb-on takes legacy, lease or raw");
  if (o.child == "driver-only") return child_driver_only();
  if (o.child.rfind("disturb:", 0) == 0) return child_disturb(o.ordinal, o.child.substr(8));
  if (o.child.rfind("measure:", 0) == 0) {
    return child_measure(o.ordinal, parse_victim(o.child.substr(8)), 20, o.replays);
  }
  const coolbench::telemetry::gpu_telemetry telemetry(o.ordinal);
  const auto& id = telemetry.identity();
  const auto start = telemetry.read(coolbench::telemetry::read_scope::fast);
  std::printf(
      "# order_effect\n\n- GPU %d: %s (%s), driver %s\n- date: %s, %d repeats, %d replays\n",
      o.ordinal, id.name.c_str(), id.uuid.c_str(), id.driver_version.c_str(), utc_now().c_str(),
      o.repeats, o.replays);
  std::printf("- at start: %d C, SM %u MHz\n\n", start.temp_gpu_c.value, start.clock_sm_mhz.value);
  bench_context b{.gpu = dev::device::get(o.ordinal),
                  .self = self_path(),
                  .warmups = 20,
                  .replays = o.replays,
                  .repeats = o.repeats,
                  .forced = false,
                  .refusal = {},
                  .disturb_on = o.disturb_on == "lease"    ? disturb_stream::lease
                                : o.disturb_on == "legacy" ? disturb_stream::legacy
                                                           : disturb_stream::raw};
  static const std::vector<std::string> parts = {"all",      "survey",    "bisect", "kernels",
                                                 "sentinel", "isolation", "detect", "profile"};
  if (std::find(parts.begin(), parts.end(), o.part) == parts.end())
    usage("unknown --part '" + o.part + "'");
  std::vector<figure> all;
  auto part = [&](const char* name, auto&& fn) {
    if (o.part != "all" && o.part != name) return;
    const auto figures = fn();
    print_tables(figures);
    std::fflush(stdout);
    all.insert(all.end(), figures.begin(), figures.end());
  };
  part("survey", [&] { return survey_victims(b); });
  part("bisect", [&] { return bisect_forms(b, config); });
  part("kernels", [&] { return per_kernel(b, config); });
  part("sentinel", [&] { return sentinel_sizes(b); });
  part("isolation", [&] { return isolation_table(b, config); });
  part("detect", [&] { return detection_trials(b, config, 10); });
  // For a profiler (ncu): one eager pass clean, the disturbance, one eager pass; no figures.
  if (o.part == "profile") profile_passes(b, config);
  const auto end = telemetry.read(coolbench::telemetry::read_scope::fast);
  std::printf("- at end: %d C, SM %u MHz\n", end.temp_gpu_c.value, end.clock_sm_mhz.value);
  if (!o.json_path.empty()) {
    nlohmann::json j;
    j["gpu"] = id.name;
    j["uuid"] = id.uuid;
    j["driver"] = id.driver_version;
    j["date"] = utc_now();
    j["victim"] = describe(config);
    j["part"] = o.part;
    j["disturb_on"] = o.disturb_on;
    j["repeats"] = o.repeats;
    j["replays"] = o.replays;
    for (const auto& f : all) {
      j["figures"].push_back({{"table", f.table},
                              {"row", f.row},
                              {"column", f.column},
                              {"unit", f.unit},
                              {"median", median(f.values)},
                              {"repeats", f.values.size()},
                              {"values", f.values}});
    }
    std::ofstream(o.json_path) << j.dump(1) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "order_effect: %s\n", e.what());
    return 1;
  }
}
