// What a waveform of a run shows of the transaction-level models: the models
// report their state changes here as they happen (at the current simulated
// time), and the Verilated blocks ask where to write their own trace. The
// core knows only this interface; cosim/waves.h writes the FST.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tessera::trace {

class WaveProbe {
public:
  // What an engine's sequencer is doing.
  enum class EngineState : std::uint8_t {
    Idle = 0,       // before its first instruction
    Control = 1,    // a control instruction (Nop, SemIncr, DmaTrigger, a satisfied SemWait)
    Busy = 2,       // executing a compute instruction
    SemWait = 3,    // waiting on a semaphore
    FetchWait = 4,  // waiting for its instruction stream to arrive
    Drain = 5,      // waiting for issued work to complete (before SemIncr, DmaTrigger, End)
    Done = 6,       // after End, or stopped by an error
  };
  static constexpr const char* kEngineStateNames[] = {"idle", "control", "busy", "sem_wait",
                                                      "fetch_wait", "drain", "done"};
  enum class Memory : std::uint8_t { Sbuf = 0, Psum = 1 };

  virtual ~WaveProbe() = default;

  virtual void engine_instruction(int engine, std::uint64_t index, std::uint8_t opcode) = 0;
  virtual void engine_state(int engine, EngineState state) = 0;
  virtual void semaphore(std::size_t index, std::uint32_t value) = 0;
  // Descriptors enqueued and not yet completed.
  virtual void dma_queue_depth(std::uint32_t engine, std::uint32_t queue, std::uint32_t depth) = 0;
  virtual void memory_traffic(Memory memory, bool write, std::uint64_t bytes) = 0;

  // Where a Verilated block ("tensor", "tensor_sampled", "dma3") writes its
  // trace; nothing when the block is not in the waveform's scope. Times in
  // the trace are picoseconds of simulated time; dumps outside [from_ps,
  // to_ps] are skipped.
  struct RtlTrace {
    std::string path;
    std::uint64_t from_ps = 0;
    std::uint64_t to_ps = UINT64_MAX;
  };
  virtual std::optional<RtlTrace> rtl_trace(const std::string& block) = 0;
};

}  // namespace tessera::trace
