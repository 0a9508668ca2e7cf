// The options a user sets, each written once (docs/measure.md, "Options"): `coolbench run`'s
// flags and the Python module's keywords are made from this table, and validate() checks a
// set against it.
#include <cmath>
#include <sstream>

#include "coolbench/core/error.hpp"
#include "coolbench/measure/options.hpp"

namespace coolbench::measure {
namespace {

using std::chrono::milliseconds;

std::int64_t whole(const option_value& v) { return std::get<std::int64_t>(v); }
double number(const option_value& v) { return std::get<double>(v); }
const std::string& text(const option_value& v) { return std::get<std::string>(v); }

milliseconds to_ms(const option_value& v) {
  return milliseconds(static_cast<std::int64_t>(std::llround(number(v) * 1000)));
}
option_value in_seconds(milliseconds d) { return static_cast<double>(d.count()) / 1000; }

/// An entry whose value is the member `field` of protocol_options.
template <class T>
option_spec entry(std::string_view name, option_kind kind, std::string_view unit,
                  std::string_view help, double low, double high, T protocol_options::*field) {
  option_spec s;
  s.name = name;
  s.kind = kind;
  s.unit = unit;
  s.help = help;
  s.low = low;
  s.high = high;
  if constexpr (std::is_same_v<T, milliseconds>) {
    s.get = [field](const protocol_options& o) -> std::optional<option_value> {
      return in_seconds(o.*field);
    };
    s.set = [field](protocol_options& o, const option_value& v) { o.*field = to_ms(v); };
  } else if constexpr (std::is_same_v<T, int>) {
    s.get = [field](const protocol_options& o) -> std::optional<option_value> {
      return std::int64_t{o.*field};
    };
    s.set = [field](protocol_options& o, const option_value& v) {
      o.*field = static_cast<int>(whole(v));
    };
  } else {
    s.get = [field](const protocol_options& o) -> std::optional<option_value> { return o.*field; };
    s.set = [field](protocol_options& o, const option_value& v) { o.*field = number(v); };
  }
  return s;
}

/// An entry whose value is one of an enum's names.
template <class E>
option_spec named(std::string_view name, std::string_view help, std::vector<std::string> (*names)(),
                  std::optional<E> protocol_options::*field, E (*parse)(const std::string&)) {
  option_spec s;
  s.name = name;
  s.kind = option_kind::name;
  s.help = help;
  s.names = names;
  s.derived_default = true;
  s.get = [field](const protocol_options& o) -> std::optional<option_value> {
    if (!(o.*field)) return std::nullopt;
    return to_string(*(o.*field));
  };
  s.set = [field, parse](protocol_options& o, const option_value& v) { o.*field = parse(text(v)); };
  return s;
}

template <class E>
option_spec named(std::string_view name, std::string_view help, std::vector<std::string> (*names)(),
                  E protocol_options::*field, E (*parse)(const std::string&)) {
  option_spec s;
  s.name = name;
  s.kind = option_kind::name;
  s.help = help;
  s.names = names;
  s.get = [field](const protocol_options& o) -> std::optional<option_value> {
    return to_string(o.*field);
  };
  s.set = [field, parse](protocol_options& o, const option_value& v) { o.*field = parse(text(v)); };
  return s;
}

std::vector<option_spec> make_table() {
  using k = option_kind;
  constexpr double most = 100'000'000;
  constexpr double day = 86'400;
  std::vector<option_spec> t;
  t.push_back(named("mode", "cold, sustained or profile", run_mode_names, &protocol_options::mode,
                    parse_run_mode));
  t.push_back(named("policy", "coolbench, naive, fixed-sleep or clock-discard",
                    sampling_policy_names, &protocol_options::policy, parse_sampling_policy));
  t.push_back(named("on_throttle",
                    "discard or label (default: discard in cold mode, label in the others)",
                    throttle_action_names, &protocol_options::on_throttle, parse_throttle_action));
  t.push_back(entry("target_temp", k::number, "C", "Cool to this before measuring", 10, 100,
                    &protocol_options::target_temp_c));
  option_spec max_temp =
      entry("max_temp", k::number, "C",
            "Pause above this, by default the GPU's slowdown threshold less 10 C", 10, 110,
            &protocol_options::target_temp_c);
  max_temp.derived_default = true;
  max_temp.get = [](const protocol_options& o) -> std::optional<option_value> {
    if (!o.max_temp_c) return std::nullopt;
    return *o.max_temp_c;
  };
  max_temp.set = [](protocol_options& o, const option_value& v) { o.max_temp_c = number(v); };
  t.push_back(std::move(max_temp));
  option_spec rel_ci = entry("rel_ci", k::number, "",
                             "Stop when the figure's CI half-width is within this fraction of it",
                             0, 1, &protocol_options::rel_ci);
  rel_ci.low_open = true;
  rel_ci.high_open = true;
  t.push_back(std::move(rel_ci));
  t.push_back(entry("min_samples", k::integer, "", "Kept samples at least", 1, most,
                    &protocol_options::min_samples));
  t.push_back(entry("max_samples", k::integer, "", "Kept samples at most", 1, most,
                    &protocol_options::max_samples));
  t.push_back(entry("min_time", k::seconds, "s", "Measure at least this long", 0, day,
                    &protocol_options::min_time));
  t.push_back(entry("max_time", k::seconds, "s", "Stop after this long", 0.001, day,
                    &protocol_options::max_time));
  t.push_back(entry("gate_timeout", k::seconds, "s", "Give up when the GPU is not cool by then",
                    0.1, day, &protocol_options::gate_timeout));
  t.push_back(entry("profile_time", k::seconds, "s", "Profile mode: measure this long", 1, day,
                    &protocol_options::profile_time));
  option_spec contexts = entry(
      "contexts", k::integer, "",
      "Spread a cold run over at least N CUDA contexts (default 5 in cold mode with the coolbench "
      "policy, else 1)",
      1, 10000, &protocol_options::contexts);
  contexts.derived_default = true;
  t.push_back(std::move(contexts));
  t.push_back(named("isolation",
                    "What clears hidden GPU state before a run and between a kept context's "
                    "bursts: none, release, touch or process",
                    isolation_names, &protocol_options::isolation, parse_isolation));
  t.push_back(named("sentinel",
                    "What watches for hidden GPU state: gemm-chain (a GPT-2-shaped fp16 GEMM "
                    "chain), l1-walk or none",
                    sentinel_kind_names, &protocol_options::sentinel, parse_sentinel_kind));
  t.push_back(entry("context_min_samples", k::integer, "", "Kept samples a context needs to count",
                    1, most, &protocol_options::context_min_samples));
  t.push_back(entry("level_spacing", k::number, "",
                    "Across contexts, guard against a level this fraction of the figure away "
                    "not seen yet (0: trust the contexts seen; docs/stats.md)",
                    0, 1, &protocol_options::level_spacing));
  return t;
}

}  // namespace

std::span<const option_spec> option_table() {
  static const std::vector<option_spec> table = make_table();
  return table;
}

const option_spec& find_option(std::string_view name) {
  for (const auto& spec : option_table()) {
    if (spec.name == name) return spec;
  }
  throw invalid_argument("unknown option '" + std::string(name) + "'");
}

}  // namespace coolbench::measure
