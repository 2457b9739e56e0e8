// Waveforms of a run for GTKWave: one FST holding the Verilated RTL's signals
// (tensor engine, DMA engines) and the transaction-level models' state on one
// time axis (picoseconds of simulated time), and a GTKWave save file beside
// it that groups and names them for a person. docs/waves.md is the user page.
//
// Why parts and a merge: the tensor engine's RTL runs ahead of SystemC time
// (an issue steps it until the command is accepted, a flush until the last
// PSUM write), while the DMA RTL and the transaction-level models move with
// SystemC time. One FST writer needs its changes in time order, so each
// source writes its own part file (the RTL through Verilator's VerilatedFstC,
// the models through the FST writer Verilator ships) and finish() merges the
// parts, streaming, into FILE.fst.
#pragma once

#include "arch/config.h"
#include "trace/wave_probe.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tessera::cosim {

// Simulated time bounds in picoseconds, both inclusive.
struct WaveWindow {
  std::uint64_t from_ps = 0;
  std::uint64_t to_ps = UINT64_MAX;
  bool contains(std::uint64_t t) const { return t >= from_ps && t <= to_ps; }
};

// "FROM:TO" in ns ("1000:5000"), with units ("2us:4us", "500ns:1.5us",
// "800ps:2000ps"), or in cycles of a named clock ("tensor@100:400": the tensor
// engine's; vector, scalar, gpsimd, sync: their engines'; dma: the DMA
// engines'). Either bound may be left out (":5us", "tensor@100:"). Throws
// std::invalid_argument naming the part that is wrong.
WaveWindow parse_wave_window(const std::string& spec, const arch::HwConfig& cfg);

// Which parts of the core go into the waveform, and how deep into the RTL.
struct WaveScope {
  bool tlm = true;              // transaction-level signals
  int tensor_depth = -1;        // RTL levels below the tensor engine's top (1: its ports); -1 all; 0 none
  int dma_depth = -1;           // the same for every DMA engine traced
  std::set<std::uint32_t> dma;  // DMA engines traced; empty: all
};

// A comma-separated list of: tlm, tensor[:DEPTH], dma[:DEPTH] (every DMA
// engine), dmaN[:DEPTH] (DMA engine N), e.g. "tlm,tensor:2,dma0,dma3".
// Throws std::invalid_argument naming the item that is wrong.
WaveScope parse_wave_scope(const std::string& spec);

struct WaveOptions {
  std::string path;  // FILE.fst; the save file is FILE.gtkw
  WaveWindow window;
  WaveScope scope;
};

// Where each instruction of the program came from, for the engines'
// `origin` signals (an enum: GTKWave shows the call site and label).
struct WaveOrigins {
  std::vector<std::string> names;                       // value v + 1 is names[v]; 0: no instruction yet
  std::vector<std::vector<std::uint32_t>> instruction;  // per engine, per instruction: its index in names
};

// One input of merge_waves: an FST part and where its signals go.
struct WavePart {
  std::string path;
  std::string scope;  // dotted scope of its signals in the merged file ("rtl.tensor")
  int depth = -1;     // levels of the part's hierarchy kept below its top module; -1 all
  // Written by Verilator (its scope "TOP" holds copies of the top module's
  // ports and is dropped) rather than by WaveRecorder.
  bool verilated = true;
};

struct WaveSignal {
  std::string name;   // full dotted name
  std::uint32_t bits = 0;
  std::string range;  // "[15:0]" (as declared), empty for a single bit
};

// Merges `parts` into one FST at `out` (timescale 1 ps), dropping every change
// outside `window`; returns the signals written. Throws std::runtime_error
// naming a part that cannot be read.
std::vector<WaveSignal> merge_waves(const std::vector<WavePart>& parts, const std::string& out,
                                    const WaveWindow& window);

// Writes the GTKWave save file for `fst` (and the opcode translate filter
// beside it): the signals of `signals` in named groups; `shown` limits the
// transaction-level rows to those signals (those that ever changed).
// The RTL ports the save file shows, group by group: the tensor engine's
// (under its top module) and each traced DMA engine's. A name the Verilated
// model does not have would silently drop out of the save file, so a test
// records a run and checks every one.
struct SaveFileGroup {
  std::string title;  // the DMA groups' titles follow "DMA engine N AXI"
  std::vector<std::string> ports;
  bool hex = true;    // else decimal
};
const std::vector<SaveFileGroup>& tensor_engine_save_file_groups();
const std::vector<SaveFileGroup>& dma_engine_save_file_groups();

void write_gtkw(const std::string& fst, const std::string& gtkw, const std::vector<WaveSignal>& signals,
                const std::set<std::string>& shown, const WaveWindow& window);

// Records a waveform of one run: the core's models report to it (as its
// trace::WaveProbe), the Verilated blocks ask it where to write, and finish()
// writes FILE.fst and FILE.gtkw.
class WaveRecorder final : public trace::WaveProbe {
public:
  WaveRecorder(WaveOptions options, const arch::HwConfig& cfg, WaveOrigins origins = {});
  ~WaveRecorder() override;

  void engine_instruction(int engine, std::uint64_t index, std::uint8_t opcode) override;
  void engine_state(int engine, EngineState state) override;
  void semaphore(std::size_t index, std::uint32_t value) override;
  void dma_queue_depth(std::uint32_t engine, std::uint32_t queue, std::uint32_t depth) override;
  void memory_traffic(Memory memory, bool write, std::uint64_t bytes) override;
  std::optional<RtlTrace> rtl_trace(const std::string& block) override;

  // Call after the run, once the Verilated models are destroyed (their
  // traces are closed then); `end_ps` is when the run ended. Writes FILE.fst
  // and FILE.gtkw and removes the parts.
  struct Result {
    std::string fst, gtkw;
    std::size_t signals = 0;
  };
  Result finish(std::uint64_t end_ps);

  const WaveOptions& options() const { return options_; }

private:
  class TlmPart;
  WaveOptions options_;
  std::string parts_dir_;
  std::unique_ptr<TlmPart> tlm_;
  std::vector<WavePart> rtl_parts_;
};

// The command that opens a waveform, as printed to users.
std::string waves_open_command(const std::string& fst);

}  // namespace tessera::cosim
