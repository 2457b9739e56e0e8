// Simulated time as statistics, reports, traces and waveforms count it:
// nanoseconds as a double (stats.txt's `_ns` statistics, report.json, trace
// slices), picoseconds for waveform files (FST timestamps, docs/waves.md).
#pragma once

#include <systemc>

#include <cmath>
#include <cstdint>

namespace tessera::trace {

inline double ns(const sc_core::sc_time& t) { return t.to_seconds() * 1e9; }

inline double ps(const sc_core::sc_time& t) { return t.to_seconds() * 1e12; }

// Now, in whole picoseconds: a waveform dump's timestamp.
inline std::uint64_t now_ps() { return static_cast<std::uint64_t>(std::llround(ps(sc_core::sc_time_stamp()))); }

}  // namespace tessera::trace
