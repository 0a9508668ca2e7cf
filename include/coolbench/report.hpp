/// @file
/// The report layer: telemetry and a run's records rendered as text, CSV and
/// JSON (docs/run-json.md), for the command and the Python module alike.
#pragma once

#include "coolbench/report/ab_report.hpp"             // IWYU pragma: export
#include "coolbench/report/compare_report.hpp"        // IWYU pragma: export
#include "coolbench/report/format.hpp"                // IWYU pragma: export
#include "coolbench/report/html_report.hpp"           // IWYU pragma: export
#include "coolbench/report/multi_report.hpp"          // IWYU pragma: export
#include "coolbench/report/release_check_report.hpp"  // IWYU pragma: export
#include "coolbench/report/run_document.hpp"          // IWYU pragma: export
#include "coolbench/report/run_report.hpp"            // IWYU pragma: export
