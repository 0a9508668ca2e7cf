// The protocol's options: their names, the table a user sets them from, and the check of a
// whole set (docs/measure.md).
#include "coolbench/measure/options.hpp"

#include <array>
#include <cmath>
#include <sstream>

#include "coolbench/core/error.hpp"

namespace coolbench::measure {
namespace {

using std::chrono::milliseconds;

template <class E>
using name_list = std::initializer_list<std::pair<const char*, E>>;

// Each enum's names, once: to_string, parse_* and the *_names lists read them.
const name_list<run_mode> k_modes = {
    {"cold", run_mode::cold}, {"sustained", run_mode::sustained}, {"profile", run_mode::profile}};
const name_list<sampling_policy> k_policies = {{"coolbench", sampling_policy::coolbench},
                                               {"naive", sampling_policy::naive},
                                               {"fixed-sleep", sampling_policy::fixed_sleep},
                                               {"clock-discard", sampling_policy::clock_discard}};
const name_list<throttle_action> k_actions = {{"discard", throttle_action::discard},
                                              {"label", throttle_action::label}};
const name_list<isolation> k_isolations = {{"none", isolation::none},
                                           {"release", isolation::release},
                                           {"touch", isolation::touch},
                                           {"process", isolation::process}};
const name_list<sentinel_kind> k_sentinels = {{"gemm-chain", sentinel_kind::gemm_chain},
                                              {"l1-walk", sentinel_kind::l1_walk},
                                              {"none", sentinel_kind::none}};

template <class E>
std::string name_of(E value, name_list<E> names) {
  for (const auto& [name, v] : names) {
    if (v == value) return name;
  }
  return "?";
}

template <class E>
std::vector<std::string> names_of(name_list<E> names) {
  std::vector<std::string> out;
  for (const auto& [name, v] : names) out.emplace_back(name);
  return out;
}

template <class E>
E parse_enum(const std::string& text, name_list<E> names, const char* what) {
  std::string valid;
  for (const auto& [name, value] : names) {
    if (text == name) return value;
    valid += (valid.empty() ? "" : ", ") + std::string(name);
  }
  throw invalid_argument("unknown " + std::string(what) + " '" + text + "'; use one of: " + valid);
}

}  // namespace

std::string to_string(run_mode mode) { return name_of(mode, k_modes); }
std::string to_string(sampling_policy policy) { return name_of(policy, k_policies); }
std::string to_string(throttle_action action) { return name_of(action, k_actions); }
std::string to_string(isolation i) { return name_of(i, k_isolations); }
std::string to_string(sentinel_kind kind) { return name_of(kind, k_sentinels); }
run_mode parse_run_mode(const std::string& text) { return parse_enum(text, k_modes, "mode"); }
sampling_policy parse_sampling_policy(const std::string& text) {
  return parse_enum(text, k_policies, "policy");
}
throttle_action parse_throttle_action(const std::string& text) {
  return parse_enum(text, k_actions, "throttle action");
}
std::vector<std::string> run_mode_names() { return names_of(k_modes); }
std::vector<std::string> sampling_policy_names() { return names_of(k_policies); }
std::vector<std::string> throttle_action_names() { return names_of(k_actions); }
std::vector<std::string> isolation_names() { return names_of(k_isolations); }
isolation parse_isolation(const std::string& text) {
  return parse_enum(text, k_isolations, "isolation");
}
std::vector<std::string> sentinel_kind_names() { return names_of(k_sentinels); }
sentinel_kind parse_sentinel_kind(const std::string& text) {
  return parse_enum(text, k_sentinels, "sentinel");
}

int default_contexts(run_mode mode, sampling_policy policy, bool resets_context) {
  return mode == run_mode::cold && policy == sampling_policy::coolbench && resets_context
             ? default_cold_contexts
             : 1;
}

std::string option_name(std::string_view name) { return std::string(name); }

std::string option_flag(std::string_view name) {
  std::string flag = "--" + std::string(name);
  for (char& c : flag) c = c == '_' ? '-' : c;
  return flag;
}

namespace {

std::string show(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

double as_number(const option_value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::nan("");
}

/// Throws unless `v` has the kind `spec` asks for and lies in its range.
void check_value(const option_spec& spec, const option_value& v, const option_spelling& spell) {
  const std::string name = spell(spec.name);
  if (spec.kind == option_kind::name) {
    if (!std::holds_alternative<std::string>(v)) throw invalid_argument(name + " takes a name");
    return;
  }
  if (spec.kind == option_kind::integer && !std::holds_alternative<std::int64_t>(v)) {
    throw invalid_argument(name + " takes a whole number");
  }
  if (std::holds_alternative<std::string>(v)) throw invalid_argument(name + " takes a number");
  const double x = as_number(v);
  if (spec.kind == option_kind::seconds && !(x >= 0)) {
    throw invalid_argument(name + " must be a non-negative number of seconds");
  }
  const bool below = spec.low_open ? !(x > spec.low) : !(x >= spec.low);
  const bool above = spec.high_open ? !(x < spec.high) : !(x <= spec.high);
  if (below || above) {
    throw invalid_argument(name + " must be in " + (spec.low_open ? "(" : "[") + show(spec.low) +
                           ", " + show(spec.high) + (spec.high_open ? ")" : "]") +
                           (spec.unit.empty() ? "" : " " + std::string(spec.unit)) + "; got " +
                           show(x));
  }
}

/// The checks that relate two options, or the option to the mode.
void check_together(const protocol_options& o, const option_spelling& spell) {
  const auto require = [](bool ok, const std::string& what) {
    if (!ok) throw invalid_argument(what);
  };
  require(o.max_samples >= o.min_samples,
          spell("min_samples") + " (" + std::to_string(o.min_samples) + ") is above " +
              spell("max_samples") + " (" + std::to_string(o.max_samples) + ")");
  require(o.max_time >= o.min_time,
          spell("min_time") + " (" + show(static_cast<double>(o.min_time.count()) / 1e3) +
              " s) is above " + spell("max_time") + " (" +
              show(static_cast<double>(o.max_time.count()) / 1e3) + " s)");
  require(!o.max_temp_c || *o.max_temp_c > o.target_temp_c,
          spell("max_temp") + " must be above " + spell("target_temp"));
  require(o.contexts == 1 || (o.mode == run_mode::cold && o.policy == sampling_policy::coolbench),
          spell("contexts") + " above 1 spreads a cold-mode run of the coolbench policy; with " +
              spell("mode") + " " + to_string(o.mode) + " and " + spell("policy") + " " +
              to_string(o.policy) + " leave it at 1");
}

/// The settings no user sets through the table (the library's callers can): named as the
/// members of protocol_options.
void check_internal(const protocol_options& o) {
  const auto require = [](bool ok, const std::string& what) {
    if (!ok) throw invalid_argument(what);
  };
  require(o.ci_level > 0.5 && o.ci_level < 1, "ci_level must be in (0.5, 1)");
  require(o.clock_fraction > 0 && o.clock_fraction <= 1, "clock_fraction must be in (0, 1]");
  require(o.discard_clock_fraction > 0 && o.discard_clock_fraction <= 1,
          "discard_clock_fraction must be in (0, 1]");
  require(o.sensor_lag.count() >= 0, "sensor_lag must not be negative");
  require(o.step_threshold > 0, "step_threshold must be positive");
  require(o.warmup_min_runs >= 0 && o.warmup_window >= 1,
          "warmup_min_runs must not be negative and warmup_window must be at least 1");
  require(o.repeats_to_cooldown >= 1, "repeats_to_cooldown must be at least 1");
  require(o.profile_temp_bucket_c > 0 && o.profile_clock_bucket_mhz > 0,
          "profile_temp_bucket_c and profile_clock_bucket_mhz must be positive");
}

}  // namespace

void validate(const protocol_options& o, const option_spelling& spelling) {
  for (const auto& spec : option_table()) {
    if (const auto v = spec.get(o)) check_value(spec, *v, spelling);
  }
  check_together(o, spelling);
  check_internal(o);
}

protocol_options options_from(const std::vector<std::pair<std::string, option_value>>& given,
                              bool resets_context, const option_spelling& spelling) {
  protocol_options o;
  bool contexts_given = false;
  for (const auto& [name, value] : given) {
    const option_spec& spec = find_option(name);
    check_value(spec, value, spelling);
    try {
      spec.set(o, value);
    } catch (const invalid_argument& e) {
      throw invalid_argument(spelling(name) + ": " + e.what());  // an unknown name
    }
    contexts_given = contexts_given || name == "contexts";
  }
  if (!contexts_given) o.contexts = default_contexts(o.mode, o.policy, resets_context);
  validate(o, spelling);
  return o;
}

}  // namespace coolbench::measure
