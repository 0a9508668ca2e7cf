// The merge of partial softmax rows that the split-keys attention kernel
// (attention_mma.cu) does in registers, as host-and-device code so the CPU
// tests (launch_shapes_test) check it against a direct softmax.
#pragma once

#include <cmath>

#include "engine/fusion/elementwise_program.hpp"  // COOLBENCH_HOST_DEVICE

namespace coolbench::engine::cuda {

/// What each of two merged parts' unnormalised output is multiplied by.
struct merge_weights {
  float mine = 0;
  float theirs = 0;
};

/// Merges a part of one row into another over disjoint keys, each as an
/// online softmax leaves it: its maximum (−∞ where no key was visible) and
/// its sum of exp(s − base), base being the maximum (0 where it is −∞).
/// `peak` and `total` become the merged part's; the merged output is
/// mine · weights.mine + theirs · weights.theirs. Two hidden parts merge to
/// a sum of 0 (finish() makes it NaN or 0). `exp` is __expf on the device.
template <class Exp>
COOLBENCH_HOST_DEVICE inline merge_weights merge_into(float& peak, float& total, float their_peak,
                                                      float their_total, Exp exp) {
  const float next = their_peak > peak ? their_peak : peak;
  const float base = next == -INFINITY ? 0.0F : next;
  const merge_weights w{exp(peak - base), exp(their_peak - base)};
  total = total * w.mine + their_total * w.theirs;
  peak = next;
  return w;
}

}  // namespace coolbench::engine::cuda
