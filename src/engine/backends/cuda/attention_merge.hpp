// The merge of partial softmax rows that the split-keys attention kernel
// (attention_mma.cu) does in shared memory, as host-and-device code so the
// CPU tests (launch_shapes_test) check it against a direct softmax.
#pragma once

#include <cmath>

#include "engine/fusion/elementwise_program.hpp"  // COOLBENCH_HOST_DEVICE

namespace coolbench::engine::cuda {

/// One row's sum and unnormalised output over all parts.
struct merged_row {
  float total = 0;
  float acc = 0;
};

/// Parts of one row over disjoint keys, each as an online softmax leaves it:
/// its maximum peaks[w · step] (−∞ where no key was visible), its sum
/// totals[w · step] of exp(s − base) and its output accs[w · acc_step] of
/// exp(s − base) · v, base being the maximum (0 where it is −∞). Each part
/// is rescaled to the common maximum (0 where every part is −∞, so the row
/// sums to 0: finish() makes it NaN or 0). `exp` is __expf on the device.
template <int Parts, class Exp>
COOLBENCH_HOST_DEVICE inline merged_row merge_parts(const float* peaks, const float* totals,
                                                    int step, const float* accs, int acc_step,
                                                    Exp exp) {
  float peak = -INFINITY;
  for (int w = 0; w < Parts; ++w) peak = peaks[w * step] > peak ? peaks[w * step] : peak;
  const float base = peak == -INFINITY ? 0.0F : peak;
  merged_row m;
  for (int w = 0; w < Parts; ++w) {
    const float weight = exp(peaks[w * step] - base);
    m.total += totals[w * step] * weight;
    m.acc += accs[w * acc_step] * weight;
  }
  return m;
}

}  // namespace coolbench::engine::cuda
