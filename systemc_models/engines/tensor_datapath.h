// The tensor engine's datapath as the engine model drives it: a stream of
// LoadStationary / MultiplyMoving commands with their data, timed in cycles
// of the tensor clock. Two implementations share this interface: the fast
// model (bit-exact numerics reference + closed-form timing) and the Verilated
// RTL; the sampled fidelity runs both and compares.
#pragma once

#include "arch/numerics.h"

#include <cstdint>
#include <memory>
#include <string>

namespace tessera::engines {

struct TensorCommand {
  enum class Op { LoadStationary, MultiplyMoving };
  Op op = Op::LoadStationary;
  arch::Bf16Matrix data;            // stationary [K, M] or moving [K, N]
  arch::PsumMode mode = arch::PsumMode::Overwrite;
  arch::Fp32Matrix* psum = nullptr;  // MultiplyMoving: [M, N] in (accumulate) and out
};

// Cycle numbers on the datapath's own clock, counted from its reset.
struct TensorTiming {
  std::uint64_t accepted = 0;   // the command handshake
  std::uint64_t completed = 0;  // its last PSUM write (MultiplyMoving) or last weight loaded
};

class TensorDatapath {
public:
  virtual ~TensorDatapath() = default;
  // Issues `cmd` no earlier than cycle `earliest`; returns when it was
  // accepted and when it completes. Results are in *cmd.psum on return.
  virtual TensorTiming issue(TensorCommand& cmd, std::uint64_t earliest) = 0;
  virtual std::string name() const = 0;
};

// The fast model: arch::matmul for the numbers and the closed-form timing of
// docs/tensor-engine.md for the cycles.
// `compute` false: timing only (the --no-data mode).
std::unique_ptr<TensorDatapath> make_fast_tensor_datapath(std::uint32_t rows, std::uint32_t cols,
                                                          std::uint32_t min_initiation_interval, bool compute = true);

}  // namespace tessera::engines
