// Shape rules of MatMul (numpy matmul: batch dimensions broadcast) and Gemm.
#include "engine/shape_inference/rules.hpp"

#include <string>
#include <utility>
#include <vector>

namespace coolbench::engine::shape_rules {

std::vector<shape_info> matmul(const op_context& c) {
  const shape_info& a = c.shape(0);
  const shape_info& b = c.shape(1);
  shape_info out = rank_unknown(a);
  if (!a.rank_known || !b.rank_known || a.dims.empty() || b.dims.empty()) return {out};
  std::vector<dimension> ad = a.dims;
  std::vector<dimension> bd = b.dims;
  if (ad.size() == 1) ad.insert(ad.begin(), known(1));
  if (bd.size() == 1) bd.push_back(known(1));
  const dimension& k_a = ad.back();
  const dimension& k_b = bd[bd.size() - 2];
  if (is_known(k_a) && is_known(k_b) && k_a.value != k_b.value) {
    inconsistent(c.n, "A's last dimension (" + std::to_string(k_a.value) + ") differs from B's " +
                          (b.dims.size() == 1 ? "only" : "second-to-last") + " dimension (" +
                          std::to_string(k_b.value) + "): A is " + a.describe() + ", B is " +
                          b.describe());
  }
  const std::vector<std::vector<dimension>> batches = {{ad.begin(), ad.end() - 2},
                                                       {bd.begin(), bd.end() - 2}};
  out.rank_known = true;
  out.dims = broadcast_dims(c.n, batches, {"A " + a.describe(), "B " + b.describe()});
  if (a.dims.size() != 1) out.dims.push_back(ad[ad.size() - 2]);
  if (b.dims.size() != 1) out.dims.push_back(bd.back());
  return {out};
}

std::vector<shape_info> gemm(const op_context& c) {
  const shape_info& a = c.shape(0);
  const shape_info& b = c.shape(1);
  std::vector<dimension> dims(2);
  if (a.rank_known && b.rank_known && a.dims.size() == 2 && b.dims.size() == 2) {
    const bool trans_a = c.n.get<std::int64_t>("transA", 0) != 0;
    const bool trans_b = c.n.get<std::int64_t>("transB", 0) != 0;
    const dimension& k_a = a.dims[trans_a ? 0 : 1];
    const dimension& k_b = b.dims[trans_b ? 1 : 0];
    if (is_known(k_a) && is_known(k_b) && k_a.value != k_b.value) {
      inconsistent(c.n, "op(A) has " + std::to_string(k_a.value) + " columns but op(B) has " +
                            std::to_string(k_b.value) + " rows: A is " + a.describe() + ", B is " +
                            b.describe());
    }
    dims = {a.dims[trans_a ? 1 : 0], b.dims[trans_b ? 0 : 1]};
  }
  return {with_type_of(a, std::move(dims))};
}

}  // namespace coolbench::engine::shape_rules
