// The tensor engine model: decodes LoadStationary / MultiplyMoving /
// Transpose, reads its operands from SBUF, drives a TensorDatapath (fast
// model, RTL, or both when sampled) and writes results to PSUM. The engine
// issues the next instruction as soon as the datapath accepts the current
// one, as the real engine pipelines them; semaphore increments after a
// matmul wait until its results have left the array. Results reach PSUM when
// the datapath delivers them (at issue for the fast model, by the next drain
// for the RTL) and an accumulate adds to PSUM as it is then, as the PSUM
// write port does.
#pragma once

#include "core/engine.h"
#include "engines/tensor_datapath.h"

#include <memory>

namespace tessera::engines {

class TensorEngine : public core::Engine {
public:
  TensorEngine(sc_core::sc_module_name name, core::CoreContext& ctx, std::unique_ptr<TensorDatapath> datapath);

  const TensorDatapath& datapath() const { return *datapath_; }

  struct TensorStats : trace::Group {
    TensorStats(trace::Stats& stats, const TensorEngine& owner);
    trace::Scalar macs, pe_cycles, matmuls;
    // The array taking in moving columns (N cycles per MultiplyMoving): the bound of HFU.
    trace::Scalar multiplying_ns;
    trace::Formula utilisation;
  };
  const TensorStats& tensor_stats() const { return tensor_stats_; }
  TensorDatapath& datapath() { return *datapath_; }

protected:
  sc_core::sc_time execute(const arch::Instruction& in) override;
  sc_core::sc_time work_done_at() const override;
  void settle() override;
  // Busy = cycles with an instruction in flight, each cycle counted once
  // however many instructions overlap in it (TensorDatapath::busy_cycles).
  bool reports_own_busy() const override { return true; }

private:
  // The operand of a LoadStationary / MultiplyMoving / Transpose (a, with its
  // MX scales in b) as the array takes it; shape, format and mode only in
  // the timing-only mode.
  arch::TensorOperand read_operand(const arch::Instruction& in);
  std::uint64_t now_cycle() const;
  sc_core::sc_time issue(TensorCommand& cmd);
  // The PSUM write port: applies `mode` to the array's output at `dst`.
  std::function<void(const arch::Fp32Matrix&)> psum_writer(const arch::AccessPattern& dst, arch::PsumMode mode);
  // Adds the busy cycles the datapath has learnt of since the last call.
  void report_busy();

  static constexpr std::size_t kWeightsLane = 1;  // the trace lane of LoadStationary
  std::unique_ptr<TensorDatapath> datapath_;
  std::uint64_t done_cycle_ = 0;  // completion of everything issued so far
  std::uint64_t busy_reported_ = 0;  // datapath busy cycles already added
  // The latest LoadStationary's format and mode (its words live in the datapath).
  arch::TensorOperand stationary_shape_;
  TensorStats tensor_stats_;
};

}  // namespace tessera::engines
