// Simulated time as statistics, reports and traces count it: nanoseconds,
// as a double (stats.txt's `_ns` statistics, report.json, trace slices).
#pragma once

#include <systemc>

namespace tessera::trace {

inline double ns(const sc_core::sc_time& t) { return t.to_seconds() * 1e9; }

}  // namespace tessera::trace
