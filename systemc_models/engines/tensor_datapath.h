// The tensor engine's datapath as the engine model drives it: a stream of
// LoadStationary / MultiplyMoving commands with their data, timed in cycles
// of the tensor clock. Two implementations share this interface: the fast
// model (bit-exact numerics reference + closed-form timing) and the Verilated
// RTL; the sampled fidelity runs both and compares.
#pragma once

#include "arch/numerics.h"
#include "arch/tensor_timing.h"
#include "trace/stats.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tessera::engines {

struct TensorCommand {
  enum class Op { LoadStationary, MultiplyMoving };
  Op op = Op::LoadStationary;
  arch::Bf16Matrix data;            // stationary [K, M] or moving [K, N]
  arch::PsumMode mode = arch::PsumMode::Overwrite;
  // MultiplyMoving: receives the array's output [M, N] (each value a column
  // sum started from zero) exactly once; the receiver applies `mode` at PSUM,
  // as the PSUM write port does (accumulate: psum = fp32_add(psum, value)).
  // Accumulating at delivery, not at issue, is what keeps accumulate chains
  // right when results leave the array after later instructions were issued.
  // Called in issue order, during issue() (fast model) or later, at the
  // latest in flush() (RTL). Empty in the timing-only mode: nothing computed.
  std::function<void(const arch::Fp32Matrix&)> write_psum;
};

// Cycle numbers on the datapath's own clock, counted from its reset.
struct TensorTiming {
  std::uint64_t accepted = 0;   // the command handshake
  std::uint64_t completed = 0;  // its last PSUM write (MultiplyMoving) or last weight loaded
};

class TensorDatapath {
public:
  virtual ~TensorDatapath() = default;
  // Issues `cmd` no earlier than cycle `earliest` (never earlier than a
  // previous `earliest`); returns when it was accepted and, where it is known
  // at issue, when it completes. A datapath that learns completion only by
  // running on (the RTL) returns `completed` = `accepted` and reports the
  // truth from flush().
  virtual TensorTiming issue(TensorCommand& cmd, std::uint64_t earliest) = 0;
  // Runs the work already issued until every result has been delivered;
  // returns the cycle at which all of it completed.
  virtual std::uint64_t flush() = 0;
  // Cycles in which at least one command was in flight (accepted and not yet
  // completed), each counted once (arch::BusyCycles), over the commands whose
  // completion is known: all of them after flush().
  virtual std::uint64_t busy_cycles() const = 0;
  virtual std::string name() const = 0;
  // Defines the datapath's own statistics, in a group "datapath" of the
  // engine's (e.g. "core.tensor.datapath").
  virtual void add_stats(trace::Group& /*engine*/) {}
};

// The fast model: arch::matmul for the numbers and the closed-form timing of
// docs/tensor-engine.md for the cycles.
// `compute` false: timing only (the --no-data mode).
std::unique_ptr<TensorDatapath> make_fast_tensor_datapath(const arch::TensorTimingParams& timing, bool compute = true);

}  // namespace tessera::engines
