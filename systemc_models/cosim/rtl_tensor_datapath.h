// The tensor engine's datapath on the Verilated RTL, and the sampled
// datapath that checks the fast model against it. Both number cycles as the
// fast model does (the tensor clock, from the core's reset), so that the
// engine model above them cannot tell which one it drives except by speed.
#pragma once

#include "core/neuron_core.h"
#include "engines/tensor_datapath.h"
#include "trace/wave_probe.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::cosim {

// What the RTL datapath observed for one command, in issue order (tests
// compare these with the fast model's answers).
struct RtlCommandRecord {
  bool load = false;
  std::uint64_t accepted = 0;
  std::uint64_t completed = 0;  // last PSUM write; for LoadStationary its last beat
};

class RtlTensorDatapath : public engines::TensorDatapath {
public:
  // The commands issued so far, with their RTL cycles (completion known
  // once the command's last PSUM write has happened).
  virtual const std::vector<RtlCommandRecord>& records() const = 0;
  // RTL clock cycles evaluated, and idle cycles skipped without evaluation.
  virtual std::uint64_t cycles_evaluated() const = 0;
  virtual std::uint64_t cycles_skipped() const = 0;
  // With waveforms on (TESSERA_WAVES=1): "<file>.fst, time <a> to <b>" for
  // cycles [from, to] since the last idle jump; empty otherwise.
  virtual std::string wave_window(std::uint64_t from, std::uint64_t to) const = 0;
  // Clocks the RTL `cycles` more cycles with nothing offered (a trace's tail
  // after flush(), which stops in the cycle of the last PSUM write).
  virtual void run_idle(std::uint64_t cycles) = 0;
};

// The Verilated engine of a rows x cols array. Throws std::runtime_error
// naming rtl/tensor_engine/array_sizes.cmake when that size was not built, or
// when the stationary load path is wider than the build's.
// TESSERA_WAVES=1 writes <wave_name>.fst (see docs/tensor-engine.md).
// `trace`: writes the RTL's signals there instead, stamped in picoseconds of
// simulated time (cycle c of the tensor clock at c x period_ps), for
// tessera run --waves (docs/waves.md).
std::unique_ptr<RtlTensorDatapath> make_rtl_tensor_datapath(const arch::TensorTimingParams& timing,
                                                            const std::string& wave_name = "core_tensor",
                                                            const std::optional<trace::WaveProbe::RtlTrace>& trace = {},
                                                            double period_ps = 1000);

// The sizes this program can simulate on RTL ("8x8", ...).
std::vector<std::string> rtl_tensor_sizes();

struct SamplingPolicy {
  // After the first instruction of each shape, every Nth MultiplyMoving is a
  // candidate, taken while the RTL has used less than budget_percent of the
  // wall time since the datapath started.
  std::int64_t sample_every = 64;
  double rtl_budget_percent = 20;
};

// What the sampled datapath does on a disagreement.
struct SampledFailure {
  // Replays the failing instruction on a fresh RTL into
  // <waves_dir>/sampled-failure-<n>.fst (+ .gtkw) and names it in the error;
  // empty: no waveform.
  std::string waves_dir;
  double tensor_period_ps = 1000;  // places the replay on the run's time axis
  // Test hook: the Nth sampled check (from 1) sees the fast model's first
  // result value with its lowest bit flipped, forcing a disagreement; 0: off.
  // rtl_tensor_factory sets it from TESSERA_INJECT_SAMPLED_FAULT.
  std::int64_t inject_fault_at_sample = 0;
};

// Runs `fast` for everything and re-executes a sample of MultiplyMoving
// instructions, each after its LoadStationary, in isolation on `rtl`.
// A difference in any result bit, in the accumulate flag on the PSUM port,
// or in the isolated accept / completion cycles against arch::TensorScheduler
// throws std::runtime_error naming the shape, both values and both cycle
// counts (the engine's sequencer adds which instruction it was).
std::unique_ptr<engines::TensorDatapath> make_sampled_tensor_datapath(std::unique_ptr<engines::TensorDatapath> fast,
                                                                      std::unique_ptr<RtlTensorDatapath> rtl,
                                                                      const arch::TensorTimingParams& timing,
                                                                      SamplingPolicy policy,
                                                                      SampledFailure on_failure = {});

// The core's tensor datapath for every fidelity: fast model for tlm, the
// Verilated engine of the config's size for rtl, both for sampled.
// `waves`: a waveform being recorded; the RTL then traces into it.
// `failure_waves_dir`: where sampled writes the waveform of a disagreement.
core::TensorDatapathFactory rtl_tensor_factory(trace::WaveProbe* waves = nullptr,
                                               const std::string& failure_waves_dir = ".");

}  // namespace tessera::cosim
