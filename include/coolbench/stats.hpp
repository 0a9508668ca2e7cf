/// @file
/// Umbrella header of the stats layer: quantiles and summaries, confidence
/// intervals of the median and (Student t) of a mean, the Mann–Whitney U
/// test, and least-squares fits of latency on temperature and SM clock. docs/stats.md gives each
/// definition and the numpy/scipy function it matches.
#pragma once

#include "coolbench/stats/linear_fit.hpp"
#include "coolbench/stats/mann_whitney.hpp"
#include "coolbench/stats/mean_ci.hpp"
#include "coolbench/stats/median_ci.hpp"
#include "coolbench/stats/mixture_ci.hpp"
#include "coolbench/stats/ratio_ci.hpp"
#include "coolbench/stats/summary.hpp"
