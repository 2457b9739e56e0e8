// Simulated time as statistics, reports, traces and waveforms count it:
// nanoseconds as a double (stats.txt's `_ns` statistics, report.json, trace
// slices), picoseconds for waveform files (FST timestamps, docs/waves.md).
//
// ns() and from_ns() give exactly what SystemC's own conversions give
// (sc_time::to_seconds() * 1e9 and sc_time(v, SC_NS)), the same operations
// in the same order, with the resolution read once: SystemC's are calls
// into its library that look the simulation context up each time, and the
// models convert a few times per memory access (tests: SimTime.*). Bit for
// bit only as long as a * b + c stays two roundings: the build's
// -ffp-contract=off (CMakeLists.txt) keeps it so.
#pragma once

#include <systemc>

#include <cmath>
#include <cstdint>

namespace tessera::trace {

// SystemC's time resolution as its conversions hold it: in femtoseconds
// (a power of ten, 1000 for the default 1 ps), and resolution units per ns
// (its scale factor for SC_NS, 1e6 fs / resolution). Read once: SystemC
// fixes the resolution when the first non-zero time is made, and these
// conversions are only used after that.
struct Resolution {
  double fs, units_per_ns;
};
inline const Resolution& resolution() {
  static const Resolution r = [] {
    const double fs = std::round(sc_core::sc_get_time_resolution().to_seconds() * 1e15);
    return Resolution{fs, 1e6 / fs};
  }();
  return r;
}

// t.to_seconds() * 1e9: (value * resolution) * 1e-15, then * 1e9, the
// value converted as SystemC converts it (its conversion differs between
// compilers for values of 2^63 and up).
// The overloads taking the resolution let a caller converting several times
// per call read it once: each read of resolution() tests its guard.
inline double ns_of_ticks(std::uint64_t v, const Resolution& r) {
  return sc_dt::uint64_to_double(v) * r.fs * 1e-15 * 1e9;
}
inline double ns_of_ticks(std::uint64_t v) { return ns_of_ticks(v, resolution()); }
inline double ns(const sc_core::sc_time& t) { return ns_of_ticks(t.value()); }

// sc_time::from_value(n), n resolution units, without its call into
// SystemC's library (which also marks the resolution fixed; it is, once a
// model runs). One unit times n: sc_time multiplies in a double, n + 0.5
// truncated, which is n exactly below 2^52. The DMA model makes a time from
// ticks at nearly every access, and the call was 1.6 % of a GEMM's
// instructions.
inline sc_core::sc_time ticks(std::uint64_t n) {
  static const sc_core::sc_time unit = sc_core::sc_get_time_resolution();
  if (n >= std::uint64_t{1} << 52) return sc_core::sc_time::from_value(n);
  return unit * static_cast<double>(n);
}

// sc_core::sc_time(v, SC_NS): v scaled to resolution units, plus a half,
// truncated; through a volatile as in SystemC, whose copy this is.
// ticks_of_ns(v) is from_ns(v).value(), without the sc_time.
inline std::uint64_t ticks_of_ns(double v, const Resolution& r) {
  if (v == 0) return 0;
  volatile double units = v * r.units_per_ns + 0.5;
  return static_cast<sc_core::sc_time::value_type>(static_cast<std::int64_t>(units));
}
inline std::uint64_t ticks_of_ns(double v) { return ticks_of_ns(v, resolution()); }
inline sc_core::sc_time from_ns(double v) { return ticks(ticks_of_ns(v)); }

// sc_core::sc_time_stamp(), the same read of the current context's time,
// inline: SystemC's is a call into its library, and the engines and the DMA
// model read the time several times per instruction and per descriptor
// (8 million calls on a large GEMM).
inline const sc_core::sc_time& current_time() { return sc_core::sc_get_curr_simcontext()->time_stamp(); }

inline double ps(const sc_core::sc_time& t) { return t.to_seconds() * 1e12; }

// Now, in whole picoseconds: a waveform dump's timestamp.
inline std::uint64_t now_ps() { return static_cast<std::uint64_t>(std::llround(ps(sc_core::sc_time_stamp()))); }

}  // namespace tessera::trace
