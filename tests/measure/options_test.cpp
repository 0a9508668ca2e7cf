// The option table: every option a user sets written once, the command line's flags and the
// Python keywords made from it; messages spelled as the caller asks; the default contexts rule.
#include "coolbench/measure/options.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "coolbench/core/error.hpp"

namespace coolbench::measure {
namespace {

using given_options = std::vector<std::pair<std::string, option_value>>;

std::string message_of(const given_options& given, const option_spelling& spelling) {
  try {
    (void)options_from(given, true, spelling);
  } catch (const invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(Options, EveryEntryIsNamedOnceAndItsDefaultPassesItsOwnCheck) {
  std::set<std::string> names;
  const protocol_options defaults;
  for (const auto& spec : option_table()) {
    EXPECT_TRUE(names.insert(std::string(spec.name)).second) << spec.name;
    EXPECT_FALSE(spec.help.empty()) << spec.name;
    EXPECT_EQ(&find_option(spec.name), &spec);
    const auto value = spec.get(defaults);
    if (!value) {
      EXPECT_TRUE(spec.derived_default) << spec.name << " has no default and derives none";
      continue;
    }
    // Given back as its own default, it changes nothing.
    protocol_options o;
    spec.set(o, *value);
    EXPECT_EQ(spec.get(o), value) << spec.name;
  }
  EXPECT_NO_THROW(validate(defaults));
  EXPECT_THROW((void)find_option("rel-ci"), invalid_argument);
}

TEST(Options, MessagesNameTheOptionAsTheCallerSpellsIt) {
  const given_options wide = {{"rel_ci", 2.0}};
  EXPECT_EQ(message_of(wide, option_name), "rel_ci must be in (0, 1); got 2");
  EXPECT_EQ(message_of(wide, option_flag), "--rel-ci must be in (0, 1); got 2");
  const given_options crossed = {{"min_samples", std::int64_t{50}},
                                 {"max_samples", std::int64_t{10}}};
  EXPECT_EQ(message_of(crossed, option_flag), "--min-samples (50) is above --max-samples (10)");
  EXPECT_EQ(message_of({{"max_time", -1.0}}, option_name),
            "max_time must be a non-negative number of seconds");
  EXPECT_EQ(message_of({{"min_samples", 2.5}}, option_name), "min_samples takes a whole number");
  EXPECT_NE(message_of({{"mode", std::string("warm")}}, option_flag).find("--mode: unknown mode"),
            std::string::npos);
  EXPECT_EQ(option_flag("context_min_samples"), "--context-min-samples");
}

TEST(Options, TimesAreSecondsGivenAndMillisecondsKept) {
  const protocol_options o = options_from({{"min_time", 0.25}, {"gate_timeout", 3.0}}, true);
  EXPECT_EQ(o.min_time, std::chrono::milliseconds(250));
  EXPECT_EQ(o.gate_timeout, std::chrono::milliseconds(3000));
  EXPECT_EQ(std::get<double>(*find_option("min_time").get(o)), 0.25);
}

TEST(Options, TheDefaultContextsRuleIsAppliedUnlessContextsAreGiven) {
  EXPECT_EQ(options_from({}, true).contexts, default_cold_contexts);
  EXPECT_EQ(options_from({}, false).contexts, 1);  // the context is kept: one
  EXPECT_EQ(options_from({{"mode", std::string("sustained")}}, true).contexts, 1);
  EXPECT_EQ(options_from({{"policy", std::string("naive")}}, true).contexts, 1);
  EXPECT_EQ(options_from({{"contexts", std::int64_t{2}}}, true).contexts, 2);
  EXPECT_EQ(default_contexts(run_mode::cold, sampling_policy::coolbench, true),
            default_cold_contexts);
}

TEST(Options, NamesRoundTrip) {
  for (const auto& name : sampling_policy_names()) {
    EXPECT_EQ(to_string(parse_sampling_policy(name)), name);
  }
  for (const auto& name : run_mode_names()) EXPECT_EQ(to_string(parse_run_mode(name)), name);
  for (const auto& name : throttle_action_names()) {
    EXPECT_EQ(to_string(parse_throttle_action(name)), name);
  }
  for (const auto& name : isolation_names()) EXPECT_EQ(to_string(parse_isolation(name)), name);
  for (const auto& name : sentinel_kind_names()) {
    EXPECT_EQ(to_string(parse_sentinel_kind(name)), name);
  }
  EXPECT_EQ(to_string(protocol_options{}.sentinel), "gemm-chain");
  try {
    (void)parse_sentinel_kind("walk");
    ADD_FAILURE() << "an unknown sentinel was accepted";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gemm-chain"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace coolbench::measure
