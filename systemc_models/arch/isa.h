// The NeuronCore instruction set: the one C++ definition of every engine's
// instructions, their binary encoding, validation and disassembly. The driver
// encodes programs with it, the sequencers decode them; docs/isa.md describes
// the same layout in prose.
#pragma once

#include "arch/config.h"
#include "arch/formats.h"

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::arch {

// Engines that own an instruction stream (one sequencer each).
enum class Engine : std::uint8_t { Tensor = 0, Vector = 1, Scalar = 2, GpSimd = 3, Sync = 4 };
inline constexpr int kNumEngines = 5;
const char* to_string(Engine e);

// Element types of SBUF/PSUM operands. The _x4 types pack four MX elements
// of the contraction into one element (NKI's float8_e4m3fn_x4,
// float8_e5m2_x4, float4_e2m1fn_x4: 4, 4 and 2 bytes), element j in byte j
// (fp4: nibble j, low nibble first); Uint8 holds MX scales (E8M0 codes).
enum class DType : std::uint8_t {
  Bf16 = 0, Fp32 = 1, Fp8E4m3 = 2, Fp8E5m2 = 3, Int32 = 4,
  Fp8E4m3x4 = 5, Fp8E5m2x4 = 6, Fp4E2m1x4 = 7, Uint8 = 8,
};
inline constexpr DType kDTypes[] = {DType::Bf16,      DType::Fp32,      DType::Fp8E4m3,   DType::Fp8E5m2, DType::Int32,
                                    DType::Fp8E4m3x4, DType::Fp8E5m2x4, DType::Fp4E2m1x4, DType::Uint8};
const char* to_string(DType t);
std::uint32_t size_of(DType t);
std::optional<DType> parse_dtype(const std::string& text);
// The tensor engine's element format of a dtype (the x4 types: of each of
// their four elements), or nothing for a dtype it cannot read.
std::optional<ElementFormat> element_format(DType t);
// The MX (quad-packed) dtypes.
bool is_mx(DType t);
// Values per element: 4 for the x4 types, else 1.
std::uint32_t values_per_element(DType t);

// Where data lives. Instruction operands are in SBUF or PSUM (None: the
// operand is absent); HBM is reached by DMA only, so an operand in it is a
// broken rule (validate) and does not decode.
enum class Memory : std::uint8_t { None = 0, Sbuf = 1, Psum = 2, Hbm = 3 };
const char* to_string(Memory m);

inline constexpr int kMaxFreeDims = 4;

// An operand: a rectangle of partitions, each read or written through the same
// free-dimension access pattern. Element (p, i0..i3) lives in partition
// start_partition + p at byte offset_bytes + size_of(dtype) * sum(ik * stride_k).
// The fields are ordered so that none needs padding (44 bytes): a large
// program holds four per instruction, a million instructions at a time.
struct AccessPattern {
  Memory memory = Memory::None;
  DType dtype = DType::Fp32;
  std::uint8_t num_dims = 0;  // 1..4 used (size, stride) pairs, outermost first
  std::uint16_t start_partition = 0;
  std::uint16_t partition_count = 0;
  std::uint32_t offset_bytes = 0;
  std::array<std::uint32_t, kMaxFreeDims> size{};
  std::array<std::int32_t, kMaxFreeDims> stride{};  // in elements

  bool valid() const { return memory != Memory::None; }
  std::uint64_t free_elements() const;  // product of sizes
  std::uint64_t elements() const { return free_elements() * partition_count; }
  // Byte offsets of each free element, in iteration order (innermost fastest).
  std::vector<std::int64_t> byte_offsets() const;
  // The lowest and one-past-highest byte touched in each partition.
  std::pair<std::int64_t, std::int64_t> byte_extent() const;
  std::string str() const;
};

// A contiguous [partitions, free] tile starting at a byte offset.
AccessPattern tile(Memory m, DType t, std::uint16_t start_partition, std::uint16_t partitions,
                   std::uint32_t offset_bytes, std::uint32_t free_elements);

enum class Opcode : std::uint8_t {
  // Control, on every engine's stream.
  Nop = 0x00,
  End = 0x01,
  SemWait = 0x02,     // block until semaphore[sem] >= value
  SemIncr = 0x03,     // semaphore[sem] += value
  DmaTrigger = 0x04,  // enqueue `count` descriptors at `address` on (dma_engine, queue), ring its doorbell
  SemSignal = 0x05,   // another core's semaphore at peer address `address` += value (through the chip's fabric)
  // Tensor engine.
  LoadStationary = 0x10,  // src [K partitions, M] -> the array's stationary buffer
  MultiplyMoving = 0x11,  // dst(PSUM) [M, N] (=|+=) stationary.T @ src [K, N]
  Transpose = 0x12,       // dst(PSUM) [F, P] = src [P, F].T, through the array
  // Vector engine.
  TensorTensor = 0x20,  // dst = a <alu> b
  TensorScalar = 0x21,  // dst = (a <alu> s0) <alu2> s1; s0 = b[p] if given else imm0, s1 = c[p] if given else imm1
  Reduce = 0x22,        // dst [P, 1] = reduce<alu>(a) along the free axes
  Copy = 0x23,          // dst = a (with dtype conversion); also GpSimd
  Memset = 0x24,        // dst = imm0
  Select = 0x25,        // dst = pred != 0 ? a : b
  // Scalar engine.
  Activation = 0x30,  // dst = f(a * imm0 + bias); bias = b[p] if given else imm1; acc [P,1] = sum(dst) if given
  // GpSimd engine.
  Iota = 0x40,             // dst[p, i] = imm0 + p * imm1 + flat(i) * imm2
  PartitionReduce = 0x41,  // dst [1, F] = reduce<alu>(a) across partitions
};
const char* to_string(Opcode op);
// Which engines may execute an opcode.
bool runs_on(Opcode op, Engine e);

enum class AluOp : std::uint8_t {
  Add = 0, Subtract = 1, Multiply = 2, Divide = 3, Max = 4, Min = 5,
  IsEqual = 6, IsGreater = 7, IsGreaterEqual = 8, IsLess = 9, IsLessEqual = 10,
  Bypass = 11,  // result = first operand (lets TensorScalar apply one op only)
};
const char* to_string(AluOp op);

enum class ActFunc : std::uint8_t {
  Identity = 0, Exp = 1, Tanh = 2, Gelu = 3, Silu = 4, Sigmoid = 5, Relu = 6, Rsqrt = 7, Reciprocal = 8,
  Square = 9,
};
const char* to_string(ActFunc f);
std::optional<ActFunc> parse_act_func(const std::string& text);

// Flag bits of an instruction.
enum InstrFlag : std::uint8_t {
  kFlagAccumulate = 1 << 0,  // MultiplyMoving: add into PSUM instead of overwriting
  // LoadStationary / MultiplyMoving of fp8: double row (tensor.fp8_rows_per_pe
  // 2). The operand's outermost free dimension has size 2: its halves are the
  // contraction rows [0, P) and [P, 2P) of its P partitions.
  kFlagDoubleRow = 1 << 1,
};

// One decoded instruction. Operand roles by opcode:
//   dst: written; a, b, c: read (c is Select's pred or Activation's accumulate output;
//   TensorScalar's b and c are optional [P, 1] per-partition scalars).
// Its fields are ordered so that it has no padding but the 4 bytes before
// `address` (216 bytes; the builder holds each engine's own instructions in
// this form, a Program holds their encoding: tessera::InstructionStream).
struct Instruction {
  Engine engine = Engine::Sync;
  Opcode opcode = Opcode::Nop;
  std::uint8_t flags = 0;
  AluOp alu = AluOp::Bypass;
  AluOp alu2 = AluOp::Bypass;
  ActFunc func = ActFunc::Identity;
  std::uint16_t sem = 0;        // SemWait / SemIncr
  float imm0 = 0, imm1 = 0, imm2 = 0;
  std::uint32_t value = 0;      // SemWait threshold / SemIncr, SemSignal delta / DmaTrigger descriptor count
  std::uint16_t dma_engine = 0; // DmaTrigger
  std::uint16_t dma_queue = 0;
  std::uint64_t address = 0;    // DmaTrigger: device address of the first descriptor; SemSignal: the semaphore's
  AccessPattern dst, a, b, c;

  bool accumulate() const { return flags & kFlagAccumulate; }
  bool double_row() const { return flags & kFlagDoubleRow; }
};
static_assert(sizeof(AccessPattern) == 44 && sizeof(Instruction) == 216,
              "a field added to an operand or an instruction: keep them free of padding");

// Encoded size: a fixed header plus 48 bytes per present operand.
inline constexpr std::size_t kInstrHeaderBytes = 48;
inline constexpr std::size_t kOperandBytes = 48;
// The longest encoding: a header and all four operands.
inline constexpr std::size_t kMaxInstrBytes = kInstrHeaderBytes + 4 * kOperandBytes;
// Where the header holds the instruction's total length (u16, little-endian):
// a sequencer reads it to know how many bytes to fetch before decoding.
inline constexpr std::size_t kInstrLengthOffset = 40;
// The total length of the instruction whose header starts at `header`.
inline std::uint16_t encoded_length(const std::uint8_t* header) {
  return static_cast<std::uint16_t>(header[kInstrLengthOffset] | (header[kInstrLengthOffset + 1] << 8));
}

// Where the header holds the opcode (u8): a program's stream reads it
// without decoding the instruction.
inline constexpr std::size_t kInstrOpcodeOffset = 1;
// Rewrites the `address` of the encoded instruction whose header starts at
// `header`: the device writes a DmaTrigger's descriptor address this way
// once it has placed the rings.
void put_address(std::uint8_t* header, std::uint64_t address);
// The scalar fields of the encoded instruction whose header starts at
// `header`, read without decoding or checking it: for a program's own
// streams, which encode() made (the device and the report read half a
// million DmaTriggers' targets and semaphore operations of a large program).
struct HeaderFields {
  Opcode opcode;
  std::uint16_t sem, dma_engine, dma_queue;
  std::uint32_t value;
  std::uint64_t address;
};
HeaderFields header_fields(const std::uint8_t* header);
// The bytes encode() makes of `in`.
inline std::size_t encoded_size(const Instruction& in) {
  return kInstrHeaderBytes +
         kOperandBytes * (std::size_t{in.dst.valid()} + in.a.valid() + in.b.valid() + in.c.valid());
}

std::vector<std::uint8_t> encode(const Instruction& in);
// The same bytes appended to `out` (a program's stream is its instructions'
// encodings one after another).
void encode_append(const Instruction& in, std::vector<std::uint8_t>& out);
// Decodes one instruction at `bytes[pos]`, advancing pos. Throws IsaError on a
// malformed encoding (unknown opcode, truncated, bad operand count).
Instruction decode(const std::vector<std::uint8_t>& bytes, std::size_t& pos);
// The same for an instruction held apart from its stream (a sequencer's
// fetch buffer): its first `available` bytes are at `header`, and it starts
// at byte `pos` of its stream, which is what an error names.
Instruction decode(const std::uint8_t* header, std::size_t available, std::size_t pos);
std::vector<Instruction> decode_all(const std::vector<std::uint8_t>& bytes);

std::string disassemble(const Instruction& in);
std::string disassemble(const std::vector<std::uint8_t>& stream);

class IsaError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Checks an instruction against the ISA's rules and the config (partitions,
// memory sizes, tensor-engine limits, PSUM banks, dtypes an engine can read).
// Returns one message per broken rule; empty when the instruction is legal.
std::vector<std::string> validate(const Instruction& in, const HwConfig& cfg);

}  // namespace tessera::arch
