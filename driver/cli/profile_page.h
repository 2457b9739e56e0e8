// The offline profile page (docs/profiling.md "The profile page"): one
// self-contained HTML file holding the run's data, the page's script
// (driver/html/profile.js) and the charting library it draws with (ECharts,
// vendored in driver/html/vendor/ by scripts/vendor-echarts), so that it
// opens from file:// with no network.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace tessera::cli {

// A run's page: its report (RunReport::to_json) and, when the run was
// traced, its timeline (Device::trace; null: no timeline).
std::string run_page(const std::string& title, const nlohmann::json& report, const nlohmann::json& trace);

// A comparison's page: its rows (compare::json) and each config's report, in
// the same order (null where a config did not run).
std::string compare_page(const std::string& title, const nlohmann::json& rows, const nlohmann::json& reports);

// A sweep's page: its results.json (sweep::results_json); each point keeps
// the figures of its report the page shows.
std::string sweep_page(const std::string& title, const nlohmann::json& results);

// A suite run's page: a row per job against the baseline (regress::against_baseline).
std::string regress_page(const std::string& title, const nlohmann::json& jobs);

// Writes `page` to `path`, making its folder; throws FileError (files.h)
// naming the path when it cannot.
void write_page(const std::string& path, const std::string& page);

}  // namespace tessera::cli
