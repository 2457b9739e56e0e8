// A built kernel: one instruction stream per engine plus the DMA descriptors
// of each queue, ready to load on a core. Made by KernelBuilder; run by Device.
#pragma once

#include "arch/dma_descriptor.h"
#include "arch/isa.h"

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

// Which instance of an SPMD launch a program is built for: NKI's
// program_id(0) and num_programs(0). Instance i runs on core i.
struct Spmd {
  int instance = 0;
  int grid = 1;
};

// A DMA queue: (engine, queue index).
using DmaQueueId = std::pair<std::uint32_t, std::uint32_t>;

// Where an operation was written: the KernelBuilder call that made it, as
// a file (an index into Program::source_files) and line; file -1: unknown.
struct CallSite {
  std::int32_t file = -1;
  std::uint32_t line = 0;
  bool operator==(const CallSite& o) const { return file == o.file && line == o.line; }
  bool operator<(const CallSite& o) const { return file != o.file ? file < o.file : line < o.line; }
};

// One engine's instructions in the form the core loads them (arch::encode:
// a 48-byte header and 48 bytes per operand), with where each begins.
// Most of a large kernel's instructions are semaphore waits and increments
// and DMA triggers, which have no operand: 52 bytes each here, where an
// arch::Instruction takes 216 (docs/performance.md). Instructions read back
// decoded, by value.
class InstructionStream {
public:
  class const_iterator {
  public:
    using iterator_category = std::input_iterator_tag;
    using value_type = arch::Instruction;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = arch::Instruction;
    const_iterator(const InstructionStream* s, std::size_t i) : s_(s), i_(i) {}
    arch::Instruction operator*() const { return (*s_)[i_]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator was = *this;
      ++i_;
      return was;
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }
    bool operator!=(const const_iterator& o) const { return i_ != o.i_; }

  private:
    const InstructionStream* s_;
    std::size_t i_;
  };

  InstructionStream() = default;
  // The stream whose instruction i is encoded at bytes[begins[i]], each
  // right after the one before. Throws std::invalid_argument, naming the
  // instruction, when the instructions' lengths do not tile `bytes`.
  InstructionStream(std::vector<std::uint8_t> bytes, std::vector<std::uint32_t> begins);

  std::size_t size() const { return begins_.size(); }
  bool empty() const { return begins_.empty(); }
  // Instruction i, decoded. Throws arch::IsaError for an instruction the
  // core could not decode either (a program made by hand may hold one).
  arch::Instruction operator[](std::size_t i) const;
  arch::Instruction back() const { return (*this)[size() - 1]; }
  // Its opcode alone, read from its header.
  arch::Opcode opcode(std::size_t i) const {
    return static_cast<arch::Opcode>(bytes_[begins_[i] + arch::kInstrOpcodeOffset]);
  }
  // Its header's scalar fields, read without decoding it; a header cut
  // short throws what decoding it would.
  arch::HeaderFields header(std::size_t i) const;
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  void push_back(const arch::Instruction& in);
  // Replaces instruction i (whose encoding may change length).
  void set(std::size_t i, const arch::Instruction& in);

  // The encoded stream and the byte each instruction begins at.
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }
  std::size_t begin_of(std::size_t i) const { return begins_[i]; }

private:
  std::vector<std::uint8_t> bytes_;
  std::vector<std::uint32_t> begins_;
};

struct Program {
  // Instructions per engine, indexed by arch::Engine.
  std::vector<InstructionStream> streams = std::vector<InstructionStream>(arch::kNumEngines);
  // Descriptors per queue, in ring order. A DmaTrigger's `address` holds the
  // ring slot of its first descriptor until Device places the rings and
  // turns slots into device addresses.
  std::map<DmaQueueId, std::vector<arch::DmaDescriptor>> rings;
  // Useful matmul FLOPs (2 per MAC), for the hardware FLOPs utilisation.
  double matmul_flops = 0;
  // The same by the stationary input's dtype: each format runs at its own
  // rate, so HFU counts its FLOPs against its own peak (Device). FLOPs not
  // in the map (a program made by hand) count as bf16.
  std::map<arch::DType, double> matmul_flops_by_dtype;
  // The kernel's nominal FLOPs (e.g. 2MNK for GEMM), set by the kernel after
  // building, for the model FLOPs utilisation; 0 takes matmul_flops.
  double model_flops = 0;
  std::string name;

  // For profiles (traces, stall reasons); not part of what the core runs.
  // The label (KernelBuilder::label) of each instruction, parallel to
  // `streams`, and of each descriptor, parallel to `rings`, as an index into
  // `label_names`, whose entry 0 is the empty label (none): a label is held
  // once however many operations carry it (a large GEMM has millions).
  std::vector<std::string> label_names = std::vector<std::string>(1);
  std::vector<std::vector<std::uint32_t>> labels = std::vector<std::vector<std::uint32_t>>(arch::kNumEngines);
  std::map<DmaQueueId, std::vector<std::uint32_t>> ring_labels;
  // The label of instruction `index` of engine `e`, or of descriptor `index`
  // of a queue; empty when it has none.
  const std::string& label(arch::Engine e, std::size_t index) const;
  const std::string& label(DmaQueueId queue, std::size_t index) const;
  // Entry `index` of `ids` (one of `labels` or `ring_labels`, found once
  // by a caller that walks many of its operations) as a label.
  const std::string& label(const std::vector<std::uint32_t>* ids, std::size_t index) const;
  // The labels that name phases of a collective between cores
  // (KernelBuilder::collective_label), in order of first use.
  std::vector<std::string> collective_labels;
  // The call site of each instruction and descriptor, parallel to `labels`
  // and `ring_labels`: a semaphore wait or increment the builder inserted
  // has the call site (and label) of the operation it was placed for.
  std::vector<std::vector<CallSite>> sites = std::vector<std::vector<CallSite>>(arch::kNumEngines);
  std::map<DmaQueueId, std::vector<CallSite>> ring_sites;
  // The kernel source files the call sites name, relative to the source tree
  // when they lie inside it (kernels/gemm/gemm.cpp).
  std::vector<std::string> source_files;
  // "file:line" of a call site; empty when it is unknown.
  std::string site_name(const CallSite& site) const;
  // The call site and label of instruction `index` of engine `e`, or of
  // descriptor `index` of a queue: "at kernels/gemm/gemm.cpp:88, label 'k=2'"
  // (the parts known; empty when neither is).
  std::string origin(arch::Engine e, std::size_t index) const;
  std::string origin(DmaQueueId queue, std::size_t index) const;
  // Who increments each semaphore: an engine name or "dma E.Q".
  std::vector<std::string> semaphore_owners;
  // The semaphores other cores raise (KernelBuilder::core_semaphore): index, name.
  std::vector<std::pair<std::uint16_t, std::string>> core_semaphores;
  // Where an operation sits: instruction `index` of engine `engine`'s
  // stream, or (dma) descriptor `index` of queue (engine, queue).
  struct OpRef {
    bool dma = false;
    std::uint32_t engine = 0, queue = 0, index = 0;
  };
  // An SBUF or PSUM allocation and the first and last operations that touch
  // it: it holds live data from the start of the one to the end of the other.
  struct TileLife {
    std::string name;
    arch::Memory memory = arch::Memory::Sbuf;
    std::uint64_t bytes = 0;  // over all its partitions
    OpRef first, last;
  };
  std::vector<TileLife> tiles;  // allocations some operation touched

  std::size_t instruction_count() const;
  std::string disassemble() const;
  std::vector<std::uint8_t> encode(arch::Engine e) const;
};

}  // namespace tessera
