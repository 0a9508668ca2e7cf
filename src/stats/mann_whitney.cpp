#include "coolbench/stats/mann_whitney.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "coolbench/core/error.hpp"
#include "stats/detail/check.hpp"

namespace coolbench::stats {
namespace {

constexpr std::string_view k_function = "stats::mann_whitney_u";
// Largest n_a·n_b for the exact distribution: its table has n_a·n_b/2 entries.
constexpr double k_exact_max_pairs = 1e6;
constexpr std::size_t k_exact_auto_max_small = 8;

struct ranked {
  double rank_sum_a = 0;  // R_a, average ranks for ties
  double tie_term = 0;    // Σ (t³ − t) over the groups of equal values
};

ranked rank_pooled(std::span<const double> a, std::span<const double> b) {
  std::vector<std::pair<double, bool>> pooled;  // (value, from a)
  pooled.reserve(a.size() + b.size());
  for (const double v : a) pooled.emplace_back(v, true);
  for (const double v : b) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  ranked result;
  std::size_t first = 0;
  while (first < pooled.size()) {
    std::size_t end = first + 1;
    while (end < pooled.size() && pooled[end].first == pooled[first].first) ++end;
    // Ranks first+1 … end share their average.
    const double average_rank = (static_cast<double>(first + 1) + static_cast<double>(end)) / 2.0;
    std::size_t from_a = 0;
    for (std::size_t i = first; i < end; ++i) from_a += pooled[i].second ? 1 : 0;
    result.rank_sum_a += average_rank * static_cast<double>(from_a);
    const auto t = static_cast<double>(end - first);
    result.tie_term += t * t * t - t;
    first = end;
  }
  return result;
}

// P(U <= u) under the null for sample sizes m and n, u <= m·n/2. The
// frequencies of U are the coefficients of the Gaussian binomial
// [m + n choose m]_q = Π_{i=1..m} (1 − q^{n+i}) / (1 − q^i), built one factor at
// a time, truncated at degree u (both steps only read lower degrees).
double exact_cdf(std::size_t m, std::size_t n, std::size_t u) {
  if (m > n) std::swap(m, n);
  std::vector<long double> c(u + 1, 0.0L);
  c[0] = 1.0L;
  long double total = 1.0L;  // C(m + n, m)
  for (std::size_t i = 1; i <= m; ++i) {
    const std::size_t shift = n + i;
    for (std::size_t k = u; k >= shift; --k) c[k] -= c[k - shift];
    for (std::size_t k = i; k <= u; ++k) c[k] += c[k - i];
    total = total * static_cast<long double>(n + i) / static_cast<long double>(i);
  }
  long double below = 0.0L;
  for (std::size_t k = 0; k <= u; ++k) below += c[k];
  return static_cast<double>(below / total);
}

}  // namespace

std::string_view to_string(mann_whitney_method method) noexcept {
  switch (method) {
    case mann_whitney_method::automatic: return "automatic";
    case mann_whitney_method::asymptotic: return "asymptotic";
    case mann_whitney_method::exact: return "exact";
  }
  return "unknown";
}

mann_whitney_result mann_whitney_u(std::span<const double> a, std::span<const double> b,
                                   mann_whitney_method method) {
  detail::require_samples(a, k_function, "a");
  detail::require_samples(b, k_function, "b");
  const auto na = static_cast<double>(a.size());
  const auto nb = static_cast<double>(b.size());
  const double pairs = na * nb;
  const ranked r = rank_pooled(a, b);
  const bool ties = r.tie_term > 0.0;

  mann_whitney_result result;
  result.n_a = a.size();
  result.n_b = b.size();
  result.u = r.rank_sum_a - na * (na + 1.0) / 2.0;
  result.common_language = result.u / pairs;
  result.rank_biserial = 2.0 * result.common_language - 1.0;
  const double u_max = std::max(result.u, pairs - result.u);

  if (method == mann_whitney_method::automatic) {
    const bool small = std::min(a.size(), b.size()) <= k_exact_auto_max_small;
    method = (small && !ties && pairs <= k_exact_max_pairs) ? mann_whitney_method::exact
                                                            : mann_whitney_method::asymptotic;
  }
  result.method = method;

  if (method == mann_whitney_method::exact) {
    if (ties) {
      throw invalid_argument(std::string(k_function) +
                             ": the exact p-value needs samples without ties (equal values); "
                             "use the asymptotic method, which corrects for ties");
    }
    if (pairs > k_exact_max_pairs) {
      throw invalid_argument(std::string(k_function) + ": the exact p-value is limited to " +
                             "n_a·n_b <= 10^6 (here " + std::to_string(a.size()) + "·" +
                             std::to_string(b.size()) + "); use the asymptotic method");
    }
    // P(U >= u_max) = P(U <= n_a·n_b − u_max) by symmetry; u is whole without ties.
    const auto u_low = static_cast<std::size_t>(std::llround(pairs - u_max));
    result.p_two_sided = std::min(1.0, 2.0 * exact_cdf(a.size(), b.size(), u_low));
    return result;
  }

  const double n = na + nb;
  const double sigma = std::sqrt(pairs / 12.0 * ((n + 1.0) - r.tie_term / (n * (n - 1.0))));
  if (!(sigma > 0.0)) {  // every value equal: no evidence of a difference
    result.p_two_sided = 1.0;
    return result;
  }
  const double z = (u_max - pairs / 2.0 - 0.5) / sigma;
  result.p_two_sided = std::min(1.0, std::erfc(z / std::sqrt(2.0)));  // 2·(1 − Φ(z))
  return result;
}

}  // namespace coolbench::stats
