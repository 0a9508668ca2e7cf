// The memory plan without a GPU: the arena layout as a pure function (a
// property test over random lifetimes), and the record/replay logic over a
// fake device whose blocks are host memory.
#include "engine/memory_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "coolbench/engine/model.hpp"
#include "coolbench/engine/session.hpp"

namespace coolbench::engine {
namespace {

// Whether two placed allocations share a byte.
bool share_bytes(const arena_layout& layout, std::span<const lifetime> a, std::size_t i,
                 std::size_t j) {
  const std::size_t end_i = layout.offsets[i] + aligned_size(a[i].bytes, k_arena_alignment);
  const std::size_t end_j = layout.offsets[j] + aligned_size(a[j].bytes, k_arena_alignment);
  return layout.offsets[i] < end_j && layout.offsets[j] < end_i;
}

TEST(memory_plan, lays_out_a_chain_in_two_slots) {
  // a -> b -> c -> d: each lives while the next is made.
  const std::vector<lifetime> chain = {{1000, 0, 2}, {1000, 1, 4}, {1000, 3, 6}, {1000, 5, 7}};
  const arena_layout layout = lay_out(chain);
  EXPECT_EQ(layout.bytes, 2 * aligned_size(1000, k_arena_alignment));
  EXPECT_NE(layout.offsets[0], layout.offsets[1]);
  EXPECT_EQ(layout.offsets[0], layout.offsets[2]);
  EXPECT_EQ(layout.offsets[1], layout.offsets[3]);
}

TEST(memory_plan, a_small_allocation_fills_a_gap) {
  // Three live together (big, small, big), then a small one when only the
  // two big ones are: it takes the small one's place between them.
  const std::vector<lifetime> a = {{4096, 0, 10}, {512, 1, 3}, {4096, 2, 10}, {256, 4, 10}};
  const arena_layout layout = lay_out(a);
  EXPECT_EQ(layout.bytes, 4096 + 4096 + 512);
  EXPECT_EQ(layout.offsets[3], layout.offsets[1]);
}

TEST(memory_plan, refuses_an_alignment_that_is_not_a_power_of_two) {
  const std::vector<lifetime> a = {{10, 0, 1}};
  EXPECT_THROW((void)lay_out(a, 48), invalid_argument);
  EXPECT_THROW((void)lay_out(a, 0), invalid_argument);
}

TEST(memory_plan, live_allocations_never_share_bytes_over_random_lifetimes) {
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(0, 60)(rng);
    std::vector<lifetime> a(n);
    std::size_t events = 0;
    for (auto& l : a) {
      l.bytes = std::uniform_int_distribution<std::size_t>(0, 5000)(rng);
      l.begin = events++;
    }
    for (auto& l : a) {
      if (std::bernoulli_distribution(0.1)(rng)) continue;  // still live at the end
      l.end = std::uniform_int_distribution<std::size_t>(l.begin + 1, events + n)(rng);
    }
    const arena_layout layout = lay_out(a);
    ASSERT_EQ(layout.offsets.size(), n);
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(layout.offsets[i] % k_arena_alignment, 0U);
      ASSERT_LE(layout.offsets[i] + aligned_size(a[i].bytes, k_arena_alignment), layout.bytes);
      total += aligned_size(a[i].bytes, k_arena_alignment);
      for (std::size_t j = i + 1; j < n; ++j) {
        if (overlap(a[i], a[j])) {
          ASSERT_FALSE(share_bytes(layout, a, i, j))
              << "trial " << trial << ": allocations " << i << " and " << j;
        }
      }
    }
    // No more than without reuse, no less than the most alive at once.
    EXPECT_LE(layout.bytes, total);
    std::size_t peak = 0;
    for (std::size_t e = 0; e < events; ++e) {
      std::size_t live = 0;
      for (const auto& l : a) {
        if (l.begin <= e && e < l.end) live += aligned_size(l.bytes, k_arena_alignment);
      }
      peak = std::max(peak, live);
    }
    EXPECT_GE(layout.bytes, peak);
  }
}

// Host memory standing in for a device block; `valid` falls to false as a
// device release would make it.
class fake_block final : public device_storage {
 public:
  explicit fake_block(std::size_t bytes, std::shared_ptr<bool> valid)
      : m_bytes(bytes), m_valid(std::move(valid)) {}
  void* address() const override {
    if (!*m_valid) throw invalid_argument("stale");
    return const_cast<std::byte*>(m_bytes.data());  // NOLINT: a fake device address
  }
  bool valid() const noexcept override { return *m_valid; }
  std::string location() const override { return "fake"; }

 private:
  std::vector<std::byte> m_bytes;
  std::shared_ptr<bool> m_valid;
};

struct fake_device {
  std::shared_ptr<bool> valid = std::make_shared<bool>(true);
  std::size_t blocks = 0;
  run_memory::block_source source() {
    return [this](std::size_t bytes) {
      ++blocks;
      return std::make_shared<fake_block>(bytes, valid);
    };
  }
};

// One run of a small "model": two temporaries per step, the last result kept.
std::shared_ptr<device_storage> step_run(run_memory& memory, std::size_t steps,
                                         std::size_t extra_bytes = 0) {
  std::shared_ptr<device_storage> carried = memory.take(1000);
  for (std::size_t i = 0; i < steps; ++i) {
    const auto temporary = memory.take(300 + extra_bytes);
    auto next = memory.take(1000);
    carried = std::move(next);
  }
  return carried;
}

TEST(run_memory, replays_the_recorded_run_from_one_arena) {
  fake_device gpu;
  run_memory memory(gpu.source(), {64, 128});
  memory.begin_recording();
  auto out = step_run(memory, 5);
  out.reset();  // outputs are dropped before the next run
  memory.end_recording();
  EXPECT_TRUE(memory.recorded());
  EXPECT_EQ(memory.allocations(), 11U);
  EXPECT_EQ(gpu.blocks, 11U);
  EXPECT_LT(memory.arena_bytes(), memory.unplanned_bytes());
  for (int run = 0; run < 3; ++run) {
    memory.begin_replay();
    out = step_run(memory, 5);
    memory.end_replay();
    ASSERT_FALSE(memory.mismatch()) << *memory.mismatch();
    EXPECT_EQ(memory.live_slices(), 1U);
    out.reset();
  }
  EXPECT_EQ(gpu.blocks, 12U) << "one arena, nothing else";
  // The fixed slots come first and do not move between runs.
  const auto slot0 = memory.fixed_slot(0);
  const auto slot1 = memory.fixed_slot(1);
  EXPECT_EQ(static_cast<std::byte*>(slot1->address()) - static_cast<std::byte*>(slot0->address()),
            256);
}

TEST(run_memory, another_size_falls_back_and_says_why) {
  fake_device gpu;
  run_memory memory(gpu.source());
  memory.begin_recording();
  step_run(memory, 3).reset();
  memory.end_recording();
  memory.begin_replay();
  auto out = step_run(memory, 3, 8);
  memory.end_replay();
  ASSERT_TRUE(memory.mismatch());
  EXPECT_NE(memory.mismatch()->find("asks for 308 bytes where the recorded run asked for 300"),
            std::string::npos)
      << *memory.mismatch();
  EXPECT_NE(out->address(), nullptr);  // served by the device layer instead
  EXPECT_THROW(memory.begin_replay(), invalid_argument);
}

TEST(run_memory, more_or_fewer_allocations_are_mismatches) {
  for (const std::size_t steps : {2U, 4U}) {
    fake_device gpu;
    run_memory memory(gpu.source());
    memory.begin_recording();
    step_run(memory, 3).reset();
    memory.end_recording();
    memory.begin_replay();
    step_run(memory, steps).reset();
    memory.end_replay();
    ASSERT_TRUE(memory.mismatch()) << steps;
    EXPECT_NE(memory.mismatch()->find(steps < 3 ? "made 5 allocations where the recorded run made 7"
                                                : "more than the 7 allocations"),
              std::string::npos)
        << *memory.mismatch();
  }
}

TEST(run_memory, a_slice_held_longer_than_recorded_is_not_shared) {
  fake_device gpu;
  run_memory memory(gpu.source());
  memory.begin_recording();
  step_run(memory, 3).reset();
  memory.end_recording();
  memory.begin_replay();
  // Keeps every allocation: the recorded run had dropped most of them.
  std::vector<std::shared_ptr<device_storage>> held;
  for (int i = 0; i < 7; ++i) held.push_back(memory.take(i % 2 == 1 ? 300 : 1000));
  memory.end_replay();
  ASSERT_TRUE(memory.mismatch());
  EXPECT_NE(memory.mismatch()->find("which the run still holds"), std::string::npos)
      << *memory.mismatch();
  for (std::size_t i = 0; i < held.size(); ++i) {
    for (std::size_t j = i + 1; j < held.size(); ++j) {
      EXPECT_NE(held[i]->address(), held[j]->address()) << i << " " << j;
    }
  }
}

TEST(run_memory, a_released_arena_is_taken_again) {
  fake_device gpu;
  run_memory memory(gpu.source(), {16});
  memory.begin_recording();
  step_run(memory, 2).reset();
  memory.end_recording();
  EXPECT_TRUE(memory.ensure_arena());
  EXPECT_FALSE(memory.ensure_arena());
  const auto slot = memory.fixed_slot(0);
  *gpu.valid = false;  // a device release
  EXPECT_FALSE(memory.arena_valid());
  EXPECT_FALSE(slot->valid());
  gpu.valid = std::make_shared<bool>(true);  // the next context's blocks
  EXPECT_TRUE(memory.ensure_arena());
  memory.begin_replay();
  step_run(memory, 2).reset();
  memory.end_replay();
  EXPECT_FALSE(memory.mismatch());
}

TEST(run_memory, replay_needs_a_recording) {
  fake_device gpu;
  run_memory memory(gpu.source());
  EXPECT_THROW(memory.begin_replay(), invalid_argument);
  EXPECT_THROW((void)memory.ensure_arena(), invalid_argument);
  // Outside a run it hands out plain blocks.
  EXPECT_NE(memory.take(10), nullptr);
  EXPECT_EQ(gpu.blocks, 1U);
}

// The CPU session: the plan holds the model's weights while it lives and
// gives them back when the inputs make another plan.
TEST(session_plan, respecializing_keeps_the_weights_and_the_outputs) {
  gpt2_config config;
  config.layers = 1;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 50;
  config.positions = 16;
  config.sequence = 8;
  session s(parse_onnx(make_gpt2_model(config), ".", "gpt2.onnx"));
  EXPECT_EQ(s.execution().mode, execution_mode::host);
  EXPECT_FALSE(s.execution().static_shapes);  // batch and sequence are not bound yet
  EXPECT_TRUE(s.fusion_counts().empty());     // the CPU runs no fusion
  const auto ids = [](std::int64_t length) {
    tensor t(dtype::int64, {1, length});
    for (std::int64_t i = 0; i < length; ++i) t.data<std::int64_t>()[i] = (i * 7) % 50;
    return t;
  };
  const std::string input = s.inputs().at(0).name;
  s.set_input(input, ids(8));
  s.run();
  // Bound, every value's shape is known: on a GPU this plan gets an arena and a graph.
  EXPECT_TRUE(s.execution().static_shapes) << s.execution().dynamic_value;
  const tensor first = s.output(0);
  s.set_input(input, ids(5));
  s.run();
  EXPECT_EQ(s.output(0).shape()[1], 5);
  s.set_input(input, ids(8));
  s.run();
  ASSERT_EQ(s.output(0).shape(), first.shape());
  EXPECT_TRUE(std::equal(first.raw().begin(), first.raw().end(), s.output(0).raw().begin()));
  // launch() + synchronize() is run() on the CPU too.
  s.launch();
  s.synchronize();
  EXPECT_TRUE(std::equal(first.raw().begin(), first.raw().end(), s.output(0).raw().begin()));
  EXPECT_EQ(s.stream(), nullptr);
}

}  // namespace
}  // namespace coolbench::engine
