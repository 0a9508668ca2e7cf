#include "engine/memory_plan.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace coolbench::engine {

bool overlap(const lifetime& a, const lifetime& b) noexcept {
  return a.begin < b.end && b.begin < a.end;
}

std::size_t aligned_size(std::size_t bytes, std::size_t alignment) noexcept {
  const std::size_t size = std::max<std::size_t>(bytes, 1);
  return (size + alignment - 1) / alignment * alignment;
}

arena_layout lay_out(std::span<const lifetime> allocations, std::size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    throw invalid_argument("arena alignment " + std::to_string(alignment) +
                           " is not a power of two");
  }
  const std::size_t n = allocations.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return allocations[a].bytes > allocations[b].bytes;
  });
  arena_layout layout;
  layout.offsets.assign(n, 0);
  std::vector<std::size_t> placed;
  std::vector<std::pair<std::size_t, std::size_t>> taken;  // [offset, end) of overlapping ones
  for (const std::size_t i : order) {
    const std::size_t size = aligned_size(allocations[i].bytes, alignment);
    taken.clear();
    for (const std::size_t j : placed) {
      if (overlap(allocations[i], allocations[j])) {
        taken.emplace_back(layout.offsets[j],
                           layout.offsets[j] + aligned_size(allocations[j].bytes, alignment));
      }
    }
    std::sort(taken.begin(), taken.end());
    // The smallest gap between the ranges in use that fits; else above them.
    std::size_t best = 0;
    std::size_t best_gap = std::numeric_limits<std::size_t>::max();
    std::size_t cursor = 0;
    for (const auto& [start, end] : taken) {
      if (start > cursor && start - cursor >= size && start - cursor < best_gap) {
        best = cursor;
        best_gap = start - cursor;
      }
      cursor = std::max(cursor, end);
    }
    layout.offsets[i] = best_gap != std::numeric_limits<std::size_t>::max() ? best : cursor;
    layout.bytes = std::max(layout.bytes, layout.offsets[i] + size);
    placed.push_back(i);
  }
  return layout;
}

namespace {

enum class phase : std::uint8_t { idle, recording, replaying };

}  // namespace

struct run_memory::state {
  run_memory::block_source blocks;
  phase now = phase::idle;
  std::uint64_t run = 0;  // which run a storage belongs to
  std::size_t event = 0;  // events of the recorded run
  std::vector<lifetime> recorded;
  bool done = false;  // recorded and laid out
  arena_layout layout;
  std::vector<std::size_t> fixed;          // slot sizes
  std::vector<std::size_t> fixed_offsets;  // their offsets, from 0
  std::size_t fixed_bytes = 0;             // where the run's allocations start
  // Per allocation: the earlier allocations whose slices share bytes with its
  // own. They must be dropped by the time it is made.
  std::vector<std::vector<std::size_t>> shares;
  std::shared_ptr<device_storage> arena;
  std::size_t next = 0;    // the allocation the running replay makes next
  std::vector<bool> live;  // per allocation, in the running replay
  std::size_t live_slices = 0;
  std::optional<std::string> mismatch;
};

namespace {

using state_ptr = std::shared_ptr<run_memory::state>;

// A block of the recorded run: its drop is an event of the run.
class recorded_block final : public device_storage {
 public:
  recorded_block(std::shared_ptr<device_storage> block, state_ptr s, std::size_t index)
      : m_block(std::move(block)), m_state(std::move(s)), m_index(index), m_run(m_state->run) {}
  ~recorded_block() override {
    if (m_state->now == phase::recording && m_state->run == m_run) {
      m_state->recorded[m_index].end = m_state->event++;
    }
  }
  recorded_block(const recorded_block&) = delete;
  recorded_block& operator=(const recorded_block&) = delete;
  recorded_block(recorded_block&&) = delete;
  recorded_block& operator=(recorded_block&&) = delete;
  void* address() const override { return m_block->address(); }
  bool valid() const noexcept override { return m_block->valid(); }
  std::string location() const override { return m_block->location(); }

 private:
  std::shared_ptr<device_storage> m_block;
  state_ptr m_state;
  std::size_t m_index;
  std::uint64_t m_run;
};

// A slice of the arena, which it keeps alive.
class arena_slice final : public device_storage {
 public:
  arena_slice(state_ptr s, std::size_t index)
      : m_state(std::move(s)),
        m_arena(m_state->arena),
        m_offset(m_state->fixed_bytes + m_state->layout.offsets[index]),
        m_index(index),
        m_run(m_state->run) {
    ++m_state->live_slices;
  }
  ~arena_slice() override {
    --m_state->live_slices;
    if (m_state->run == m_run && m_index < m_state->live.size()) m_state->live[m_index] = false;
  }
  arena_slice(const arena_slice&) = delete;
  arena_slice& operator=(const arena_slice&) = delete;
  arena_slice(arena_slice&&) = delete;
  arena_slice& operator=(arena_slice&&) = delete;
  void* address() const override { return static_cast<std::byte*>(m_arena->address()) + m_offset; }
  bool valid() const noexcept override { return m_arena->valid(); }
  std::string location() const override { return m_arena->location(); }

 private:
  state_ptr m_state;
  std::shared_ptr<device_storage> m_arena;
  std::size_t m_offset;
  std::size_t m_index;
  std::uint64_t m_run;
};

}  // namespace

namespace {

// A fixed slot: the arena's bytes at an offset, for the arena's lifetime.
class fixed_slice final : public device_storage {
 public:
  fixed_slice(std::shared_ptr<device_storage> arena, std::size_t offset)
      : m_arena(std::move(arena)), m_offset(offset) {}
  void* address() const override { return static_cast<std::byte*>(m_arena->address()) + m_offset; }
  bool valid() const noexcept override { return m_arena->valid(); }
  std::string location() const override { return m_arena->location(); }

 private:
  std::shared_ptr<device_storage> m_arena;
  std::size_t m_offset;
};

}  // namespace

run_memory::run_memory(block_source blocks, std::vector<std::size_t> fixed)
    : m_state(std::make_shared<state>()) {
  m_state->blocks = std::move(blocks);
  for (const std::size_t bytes : fixed) {
    m_state->fixed_offsets.push_back(m_state->fixed_bytes);
    m_state->fixed_bytes += aligned_size(bytes, k_arena_alignment);
  }
  m_state->fixed = std::move(fixed);
}

run_memory::~run_memory() { abandon(); }

void run_memory::begin_recording() {
  state& s = *m_state;
  s.now = phase::recording;
  ++s.run;
  s.event = 0;
  s.recorded.clear();
  s.done = false;
}

void run_memory::end_recording() {
  state& s = *m_state;
  s.now = phase::idle;
  s.layout = lay_out(s.recorded);
  const std::size_t n = s.recorded.size();
  s.shares.assign(n, {});
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t lo = s.layout.offsets[j];
    const std::size_t hi = lo + aligned_size(s.recorded[j].bytes, k_arena_alignment);
    for (std::size_t i = 0; i < j; ++i) {
      const std::size_t start = s.layout.offsets[i];
      const std::size_t end = start + aligned_size(s.recorded[i].bytes, k_arena_alignment);
      if (start < hi && lo < end) s.shares[j].push_back(i);
    }
  }
  s.done = true;
}

void run_memory::begin_replay() {
  state& s = *m_state;
  if (!s.done) throw invalid_argument("run_memory: no run was recorded");
  if (s.mismatch) throw invalid_argument("run_memory: the plan mismatched: " + *s.mismatch);
  ensure_arena();
  s.now = phase::replaying;
  ++s.run;
  s.next = 0;
  s.live.assign(s.recorded.size(), false);
}

void run_memory::end_replay() {
  state& s = *m_state;
  const bool replaying = s.now == phase::replaying;
  s.now = phase::idle;
  if (replaying && !s.mismatch && s.next != s.recorded.size()) {
    mismatched("the run made " + std::to_string(s.next) +
               " allocations where the recorded run made " + std::to_string(s.recorded.size()));
  }
}

bool run_memory::ensure_arena() {
  state& s = *m_state;
  if (!s.done) throw invalid_argument("run_memory: no run was recorded");
  if (arena_valid()) return false;
  s.arena.reset();  // its slices keep a freed one alive until they go
  s.arena = s.blocks(std::max<std::size_t>(s.fixed_bytes + s.layout.bytes, 1));
  return true;
}

std::shared_ptr<device_storage> run_memory::fixed_slot(std::size_t i) const {
  if (!arena_valid() || i >= m_state->fixed.size()) {
    throw invalid_argument("run_memory: no arena, or no fixed slot " + std::to_string(i));
  }
  return std::make_shared<fixed_slice>(m_state->arena, m_state->fixed_offsets[i]);
}

void run_memory::abandon() noexcept {
  m_state->now = phase::idle;
  ++m_state->run;
}

void run_memory::mismatched(std::string why) {
  m_state->mismatch = std::move(why);
  m_state->now = phase::idle;
}

std::shared_ptr<device_storage> run_memory::take(std::size_t bytes) {
  state& s = *m_state;
  if (s.now == phase::recording) {
    const std::size_t index = s.recorded.size();
    s.recorded.push_back({bytes, s.event++, k_still_live});
    return std::make_shared<recorded_block>(s.blocks(bytes), m_state, index);
  }
  if (s.now != phase::replaying) return s.blocks(bytes);
  const std::size_t j = s.next++;
  if (j >= s.recorded.size()) {
    mismatched("the run makes more than the " + std::to_string(s.recorded.size()) +
               " allocations of the recorded run");
  } else if (s.recorded[j].bytes != bytes) {
    mismatched("allocation " + std::to_string(j) + " of the run asks for " + std::to_string(bytes) +
               " bytes where the recorded run asked for " + std::to_string(s.recorded[j].bytes));
  } else {
    for (const std::size_t i : s.shares[j]) {
      if (!s.live[i]) continue;
      mismatched("allocation " + std::to_string(j) + " would share memory with allocation " +
                 std::to_string(i) +
                 ", which the run still holds (the recorded run had dropped it)");
      break;
    }
  }
  if (s.now != phase::replaying) return s.blocks(bytes);
  s.live[j] = true;
  return std::make_shared<arena_slice>(m_state, j);
}

bool run_memory::recorded() const noexcept { return m_state->done; }

const std::optional<std::string>& run_memory::mismatch() const noexcept {
  return m_state->mismatch;
}

bool run_memory::arena_valid() const noexcept { return m_state->arena && m_state->arena->valid(); }

void run_memory::drop_arena() noexcept { m_state->arena.reset(); }

std::size_t run_memory::arena_bytes() const noexcept {
  return m_state->done ? m_state->fixed_bytes + m_state->layout.bytes : 0;
}

std::size_t run_memory::allocations() const noexcept { return m_state->recorded.size(); }

std::size_t run_memory::unplanned_bytes() const noexcept {
  std::size_t total = 0;
  for (const auto& l : m_state->recorded) total += aligned_size(l.bytes, k_arena_alignment);
  return total;
}

std::size_t run_memory::live_slices() const noexcept { return m_state->live_slices; }

}  // namespace coolbench::engine
