// The memory plan of a session's runs on a device backend: one run is
// recorded (every allocation, in order, and when its storage is dropped,
// temporaries inside an op included), the allocations are laid out in one
// arena from those lifetimes, and later runs get arena slices in the same
// order instead of allocating. A run that asks for something else (another
// size, more allocations, a slice still in use) gets the rest of its memory
// from the device layer and ends the plan's use of the arena, saying why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/backend.hpp"

namespace coolbench::engine {

/// Slices start at multiples of this (cuBLASLt and vectorised kernels want 16;
/// 256 keeps every slice as aligned as a fresh cudaMalloc block's first bytes).
inline constexpr std::size_t k_arena_alignment = 256;
/// The end of an allocation the run still held when it finished (an output).
inline constexpr std::size_t k_still_live = std::numeric_limits<std::size_t>::max();

/// One allocation of a recorded run. Each allocation and each drop is one
/// event of the run; an allocation lives over [begin, end).
struct lifetime {
  std::size_t bytes = 0;
  std::size_t begin = 0;
  std::size_t end = k_still_live;
};

/// Whether two allocations are alive at the same time.
[[nodiscard]] bool overlap(const lifetime& a, const lifetime& b) noexcept;

/// `bytes` (at least 1) rounded up to `alignment`.
[[nodiscard]] std::size_t aligned_size(std::size_t bytes, std::size_t alignment) noexcept;

struct arena_layout {
  std::vector<std::size_t> offsets;  ///< per allocation, multiples of the alignment
  std::size_t bytes = 0;             ///< the arena's size
};

/// Offsets in one arena such that allocations alive at the same time never
/// share a byte: largest first, each in the smallest gap (best fit) left by
/// the allocations already placed whose lifetimes overlap its own, or above
/// them all. Throws invalid_argument for an alignment that is not a power of two.
[[nodiscard]] arena_layout lay_out(std::span<const lifetime> allocations,
                                   std::size_t alignment = k_arena_alignment);

/// Records a run, then serves later runs from the arena (see the file's comment).
class run_memory final : public allocation_source {
 public:
  /// Device memory from the device layer: the recorded run's blocks, the
  /// arena, and what a mismatched run takes.
  using block_source = std::function<std::shared_ptr<device_storage>(std::size_t bytes)>;

  /// `fixed` are the sizes of slots that live as long as the arena (the
  /// graph inputs'), placed before the run's allocations.
  explicit run_memory(block_source blocks, std::vector<std::size_t> fixed = {});
  ~run_memory() override;
  run_memory(const run_memory&) = delete;
  run_memory& operator=(const run_memory&) = delete;
  run_memory(run_memory&&) = delete;
  run_memory& operator=(run_memory&&) = delete;

  /// Starts the recorded run: take() hands out blocks of the block source.
  void begin_recording();
  /// Ends it and lays out the arena (what the run still holds stays live).
  void end_recording();
  /// Starts a run served from the arena, taking the arena from the block
  /// source first when there is none or a device release freed it. Throws
  /// invalid_argument when nothing was recorded, or the plan mismatched.
  void begin_replay();
  /// Ends that run: one that made fewer allocations than recorded is a mismatch.
  void end_replay();
  /// Ends a run an exception cut short (neither recorded nor checked).
  void abandon() noexcept;
  /// Takes the arena from the block source when there is none or a device
  /// release freed it; true when it did (what the arena held is gone).
  /// Throws invalid_argument when nothing was recorded.
  bool ensure_arena();
  /// Fixed slot i of the arena (ensure_arena() first).
  [[nodiscard]] std::shared_ptr<device_storage> fixed_slot(std::size_t i) const;

  [[nodiscard]] std::shared_ptr<device_storage> take(std::size_t bytes) override;

  [[nodiscard]] bool recorded() const noexcept;
  /// Why the arena is no longer used; empty while it is.
  [[nodiscard]] const std::optional<std::string>& mismatch() const noexcept;
  /// Whether the arena is there and not freed by a device release.
  [[nodiscard]] bool arena_valid() const noexcept;
  /// Lets the arena go (the layout stays; the next replay takes it again).
  void drop_arena() noexcept;
  [[nodiscard]] std::size_t arena_bytes() const noexcept;
  /// Allocations per run, as recorded.
  [[nodiscard]] std::size_t allocations() const noexcept;
  /// What the recorded run would have needed without reuse (the sum of its allocations).
  [[nodiscard]] std::size_t unplanned_bytes() const noexcept;
  /// Arena slices not dropped yet (outputs held between runs).
  [[nodiscard]] std::size_t live_slices() const noexcept;

  struct state;

 private:
  void mismatched(std::string why);
  std::shared_ptr<state> m_state;
};

}  // namespace coolbench::engine
