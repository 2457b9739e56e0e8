#include "arch/isa.h"

#include "arch/address_map.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <string_view>

namespace tessera::arch {

const char* to_string(Engine e) {
  switch (e) {
    case Engine::Tensor: return "tensor";
    case Engine::Vector: return "vector";
    case Engine::Scalar: return "scalar";
    case Engine::GpSimd: return "gpsimd";
    case Engine::Sync: return "sync";
  }
  return "?";
}

const char* to_string(DType t) {
  switch (t) {
    case DType::Bf16: return "bf16";
    case DType::Fp32: return "fp32";
    case DType::Fp8E4m3: return "fp8_e4m3";
    case DType::Fp8E5m2: return "fp8_e5m2";
    case DType::Int32: return "int32";
    case DType::Fp8E4m3x4: return "fp8_e4m3_x4";
    case DType::Fp8E5m2x4: return "fp8_e5m2_x4";
    case DType::Fp4E2m1x4: return "fp4_e2m1_x4";
    case DType::Uint8: return "uint8";
  }
  return "?";
}

std::uint32_t size_of(DType t) {
  switch (t) {
    case DType::Bf16: return 2;
    case DType::Fp32: return 4;
    case DType::Fp8E4m3: return 1;
    case DType::Fp8E5m2: return 1;
    case DType::Int32: return 4;
    case DType::Fp8E4m3x4: return 4;
    case DType::Fp8E5m2x4: return 4;
    case DType::Fp4E2m1x4: return 2;
    case DType::Uint8: return 1;
  }
  return 0;
}

std::optional<DType> parse_dtype(const std::string& text) {
  for (DType t : kDTypes)
    if (text == to_string(t)) return t;
  return std::nullopt;
}

std::optional<ElementFormat> element_format(DType t) {
  switch (t) {
    case DType::Bf16: return ElementFormat::Bf16;
    case DType::Fp32: return ElementFormat::Fp32;
    case DType::Fp8E4m3:
    case DType::Fp8E4m3x4: return ElementFormat::Fp8E4m3;
    case DType::Fp8E5m2:
    case DType::Fp8E5m2x4: return ElementFormat::Fp8E5m2;
    case DType::Fp4E2m1x4: return ElementFormat::Fp4E2m1;
    default: return std::nullopt;
  }
}

bool is_mx(DType t) { return t == DType::Fp8E4m3x4 || t == DType::Fp8E5m2x4 || t == DType::Fp4E2m1x4; }

std::uint32_t values_per_element(DType t) { return is_mx(t) ? 4 : 1; }

const char* to_string(Memory m) {
  switch (m) {
    case Memory::None: return "none";
    case Memory::Sbuf: return "sbuf";
    case Memory::Psum: return "psum";
    case Memory::Hbm: return "hbm";
  }
  return "?";
}

const char* to_string(Opcode op) {
  switch (op) {
    case Opcode::Nop: return "Nop";
    case Opcode::End: return "End";
    case Opcode::SemWait: return "SemWait";
    case Opcode::SemIncr: return "SemIncr";
    case Opcode::DmaTrigger: return "DmaTrigger";
    case Opcode::SemSignal: return "SemSignal";
    case Opcode::LoadStationary: return "LoadStationary";
    case Opcode::MultiplyMoving: return "MultiplyMoving";
    case Opcode::Transpose: return "Transpose";
    case Opcode::TensorTensor: return "TensorTensor";
    case Opcode::TensorScalar: return "TensorScalar";
    case Opcode::Reduce: return "Reduce";
    case Opcode::Copy: return "Copy";
    case Opcode::Memset: return "Memset";
    case Opcode::Select: return "Select";
    case Opcode::Activation: return "Activation";
    case Opcode::Iota: return "Iota";
    case Opcode::PartitionReduce: return "PartitionReduce";
  }
  return nullptr;
}

bool runs_on(Opcode op, Engine e) {
  switch (op) {
    case Opcode::Nop:
    case Opcode::End:
    case Opcode::SemWait:
    case Opcode::SemIncr:
    case Opcode::DmaTrigger:
    case Opcode::SemSignal: return true;
    case Opcode::LoadStationary:
    case Opcode::MultiplyMoving:
    case Opcode::Transpose: return e == Engine::Tensor;
    // tensor_scalar also streams through the scalar (activation) engine's
    // datapath, as the public NKI ISA allows (nki.isa.tensor_scalar,
    // engine=scalar): what balances a loop whose vector engine is its bound.
    case Opcode::TensorScalar: return e == Engine::Vector || e == Engine::Scalar;
    case Opcode::TensorTensor:
    case Opcode::Reduce:
    case Opcode::Memset:
    case Opcode::Select: return e == Engine::Vector;
    case Opcode::Copy: return e == Engine::Vector || e == Engine::GpSimd || e == Engine::Scalar;
    case Opcode::Activation: return e == Engine::Scalar;
    case Opcode::Iota:
    case Opcode::PartitionReduce: return e == Engine::GpSimd;
  }
  return false;
}

const char* to_string(AluOp op) {
  static const char* names[] = {"add", "subtract", "multiply", "divide", "max", "min",
                                "is_equal", "is_greater", "is_greater_equal", "is_less", "is_less_equal", "bypass"};
  const auto i = static_cast<std::size_t>(op);
  return i < std::size(names) ? names[i] : "?";
}

const char* to_string(ActFunc f) {
  static const char* names[] = {"identity", "exp", "tanh", "gelu", "silu", "sigmoid", "relu", "rsqrt", "reciprocal", "square"};
  const auto i = static_cast<std::size_t>(f);
  return i < std::size(names) ? names[i] : "?";
}

std::optional<ActFunc> parse_act_func(const std::string& text) {
  for (int i = 0; i <= static_cast<int>(ActFunc::Square); ++i)
    if (text == to_string(static_cast<ActFunc>(i))) return static_cast<ActFunc>(i);
  return std::nullopt;
}

std::uint64_t AccessPattern::free_elements() const {
  std::uint64_t n = 1;
  for (int d = 0; d < num_dims; ++d) n *= size[d];
  return num_dims == 0 ? 0 : n;
}

std::vector<std::int64_t> AccessPattern::byte_offsets() const {
  std::vector<std::int64_t> out;
  out.reserve(free_elements());
  std::array<std::uint32_t, kMaxFreeDims> idx{};
  const std::int64_t esize = size_of(dtype);
  for (std::uint64_t n = 0; n < free_elements(); ++n) {
    std::int64_t off = offset_bytes;
    for (int d = 0; d < num_dims; ++d) off += esize * static_cast<std::int64_t>(idx[d]) * stride[d];
    out.push_back(off);
    for (int d = num_dims - 1; d >= 0; --d) {  // innermost (last) dimension runs fastest
      if (++idx[d] < size[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

std::pair<std::int64_t, std::int64_t> AccessPattern::byte_extent() const {
  // Each dimension adds its extreme index times its stride, on the low or high
  // side by the stride's sign; no need to walk every element. In 128 bits: a
  // decoded pattern may hold any 32-bit size and stride, whose extent
  // overflows 64 bits; it is clamped, so that it still reads as out of range.
  __int128 lo = offset_bytes, hi = offset_bytes;
  const std::int64_t esize = size_of(dtype);
  for (int d = 0; d < num_dims; ++d) {
    const __int128 span = static_cast<__int128>(esize) * (size[d] == 0 ? 0 : size[d] - 1) * stride[d];
    (span < 0 ? lo : hi) += span;
  }
  const auto clamp = [](__int128 v) {
    return static_cast<std::int64_t>(std::clamp<__int128>(v, std::numeric_limits<std::int64_t>::min(),
                                                          std::numeric_limits<std::int64_t>::max()));
  };
  return {clamp(lo), clamp(hi + esize)};
}

namespace {

// Disassembly writes into one buffer: a path's report names tens of
// thousands of instructions, and a string per piece cost most of it.
using Text = fmt::memory_buffer;

void append_pattern(Text& out, const AccessPattern& p) {
  if (!p.valid()) {
    out.push_back('-');
    return;
  }
  fmt::format_to(std::back_inserter(out), FMT_COMPILE("{}[p{}:{} +{}B {} "), to_string(p.memory), p.start_partition,
                 p.start_partition + p.partition_count, p.offset_bytes, to_string(p.dtype));
  for (int d = 0; d < p.num_dims; ++d)
    fmt::format_to(std::back_inserter(out), FMT_COMPILE("({},{})"), p.size[d], p.stride[d]);
  out.push_back(']');
}

}  // namespace

std::string AccessPattern::str() const {
  Text out;
  append_pattern(out, *this);
  return fmt::to_string(out);
}

AccessPattern tile(Memory m, DType t, std::uint16_t start_partition, std::uint16_t partitions,
                   std::uint32_t offset_bytes, std::uint32_t free_elements) {
  AccessPattern ap;
  ap.memory = m;
  ap.dtype = t;
  ap.start_partition = start_partition;
  ap.partition_count = partitions;
  ap.offset_bytes = offset_bytes;
  ap.num_dims = 1;
  ap.size[0] = free_elements;
  ap.stride[0] = 1;
  return ap;
}

// ---------------------------------------------------------------- encoding

namespace {

// Where the header holds `address` (u64).
constexpr std::size_t kInstrAddressOffset = 32;
constexpr std::size_t kInstrSemOffset = 20, kInstrDmaEngineOffset = 22, kInstrValueOffset = 24,
                      kInstrDmaQueueOffset = 28;

template <typename T>
void put(std::uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));  // little-endian hosts only, as the layout says
}

template <typename T>
T get(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

void encode_operand(const AccessPattern& ap, std::uint8_t* p) {
  p[0] = static_cast<std::uint8_t>(ap.memory);
  p[1] = static_cast<std::uint8_t>(ap.dtype);
  p[2] = ap.num_dims;
  put<std::uint16_t>(p + 4, ap.start_partition);
  put<std::uint16_t>(p + 6, ap.partition_count);
  put<std::uint32_t>(p + 8, ap.offset_bytes);
  for (int d = 0; d < kMaxFreeDims; ++d) {
    put<std::uint32_t>(p + 12 + 4 * d, ap.size[d]);
    put<std::int32_t>(p + 28 + 4 * d, ap.stride[d]);
  }
}

AccessPattern decode_operand(const std::uint8_t* p, std::size_t at) {
  AccessPattern ap;
  if (p[0] > static_cast<std::uint8_t>(Memory::Psum) || p[0] == 0)
    throw IsaError(fmt::format("byte {}: operand memory {} is not sbuf (1) or psum (2)", at, p[0]));
  if (p[1] > static_cast<std::uint8_t>(DType::Uint8))
    throw IsaError(fmt::format("byte {}: unknown operand dtype {}", at + 1, p[1]));
  if (p[2] < 1 || p[2] > kMaxFreeDims)
    throw IsaError(fmt::format("byte {}: operand has {} free dimensions (1..{} allowed)", at + 2, p[2], kMaxFreeDims));
  ap.memory = static_cast<Memory>(p[0]);
  ap.dtype = static_cast<DType>(p[1]);
  ap.num_dims = p[2];
  ap.start_partition = get<std::uint16_t>(p + 4);
  ap.partition_count = get<std::uint16_t>(p + 6);
  ap.offset_bytes = get<std::uint32_t>(p + 8);
  for (int d = 0; d < kMaxFreeDims; ++d) {
    ap.size[d] = get<std::uint32_t>(p + 12 + 4 * d);
    ap.stride[d] = get<std::int32_t>(p + 28 + 4 * d);
  }
  return ap;
}

}  // namespace

void encode_append(const Instruction& in, std::vector<std::uint8_t>& out) {
  const AccessPattern* ops[] = {&in.dst, &in.a, &in.b, &in.c};
  std::uint8_t mask = 0;
  std::size_t n = 0;
  for (int i = 0; i < 4; ++i) {
    if (ops[i]->valid()) {
      mask |= static_cast<std::uint8_t>(1u << i);
      ++n;
    }
  }
  const std::size_t first = out.size(), length = kInstrHeaderBytes + n * kOperandBytes;
  out.resize(first + length, 0);
  std::uint8_t* h = out.data() + first;
  h[0] = static_cast<std::uint8_t>(in.engine);
  h[kInstrOpcodeOffset] = static_cast<std::uint8_t>(in.opcode);
  h[2] = in.flags;
  h[3] = mask;
  h[4] = static_cast<std::uint8_t>(in.alu);
  h[5] = static_cast<std::uint8_t>(in.alu2);
  h[6] = static_cast<std::uint8_t>(in.func);
  put<float>(h + 8, in.imm0);
  put<float>(h + 12, in.imm1);
  put<float>(h + 16, in.imm2);
  put<std::uint16_t>(h + kInstrSemOffset, in.sem);
  put<std::uint16_t>(h + kInstrDmaEngineOffset, in.dma_engine);
  put<std::uint32_t>(h + kInstrValueOffset, in.value);
  put<std::uint16_t>(h + kInstrDmaQueueOffset, in.dma_queue);
  put<std::uint64_t>(h + kInstrAddressOffset, in.address);
  put<std::uint16_t>(h + kInstrLengthOffset, static_cast<std::uint16_t>(length));
  std::size_t at = kInstrHeaderBytes;
  for (int i = 0; i < 4; ++i) {
    if (!ops[i]->valid()) continue;
    encode_operand(*ops[i], h + at);
    at += kOperandBytes;
  }
}

void put_address(std::uint8_t* header, std::uint64_t address) {
  put<std::uint64_t>(header + kInstrAddressOffset, address);
}

HeaderFields header_fields(const std::uint8_t* header) {
  return {static_cast<Opcode>(header[kInstrOpcodeOffset]), get<std::uint16_t>(header + kInstrSemOffset),
          get<std::uint16_t>(header + kInstrDmaEngineOffset), get<std::uint16_t>(header + kInstrDmaQueueOffset),
          get<std::uint32_t>(header + kInstrValueOffset), get<std::uint64_t>(header + kInstrAddressOffset)};
}

std::vector<std::uint8_t> encode(const Instruction& in) {
  std::vector<std::uint8_t> out;
  encode_append(in, out);
  return out;
}

Instruction decode(const std::uint8_t* h, std::size_t available, std::size_t pos) {
  if (kInstrHeaderBytes > available)
    throw IsaError(fmt::format("byte {}: truncated instruction header ({} bytes left)", pos, available));
  Instruction in;
  if (h[0] >= kNumEngines) throw IsaError(fmt::format("byte {}: unknown engine {}", pos, h[0]));
  in.engine = static_cast<Engine>(h[0]);
  in.opcode = static_cast<Opcode>(h[kInstrOpcodeOffset]);
  if (!to_string(in.opcode))
    throw IsaError(fmt::format("byte {}: unknown opcode 0x{:02x}", pos + kInstrOpcodeOffset, h[kInstrOpcodeOffset]));
  in.flags = h[2];
  const std::uint8_t mask = h[3];
  if (mask & 0xf0) throw IsaError(fmt::format("byte {}: bad operand mask 0x{:02x}", pos + 3, mask));
  if (h[4] > static_cast<std::uint8_t>(AluOp::Bypass) || h[5] > static_cast<std::uint8_t>(AluOp::Bypass))
    throw IsaError(fmt::format("byte {}: unknown ALU operation", pos + 4));
  if (h[6] > static_cast<std::uint8_t>(ActFunc::Square))
    throw IsaError(fmt::format("byte {}: unknown activation function {}", pos + 6, h[6]));
  in.alu = static_cast<AluOp>(h[4]);
  in.alu2 = static_cast<AluOp>(h[5]);
  in.func = static_cast<ActFunc>(h[6]);
  in.imm0 = get<float>(h + 8);
  in.imm1 = get<float>(h + 12);
  in.imm2 = get<float>(h + 16);
  in.sem = get<std::uint16_t>(h + kInstrSemOffset);
  in.dma_engine = get<std::uint16_t>(h + kInstrDmaEngineOffset);
  in.value = get<std::uint32_t>(h + kInstrValueOffset);
  in.dma_queue = get<std::uint16_t>(h + kInstrDmaQueueOffset);
  in.address = get<std::uint64_t>(h + kInstrAddressOffset);
  const std::size_t length = encoded_length(h);
  const std::size_t operands = static_cast<std::size_t>(__builtin_popcount(mask));
  if (length != kInstrHeaderBytes + operands * kOperandBytes)
    throw IsaError(fmt::format("byte {}: length {} does not match {} operands", pos + kInstrLengthOffset, length,
                               operands));
  if (length > available)
    throw IsaError(fmt::format("byte {}: truncated instruction ({} of {} bytes)", pos, available, length));
  AccessPattern* ops[] = {&in.dst, &in.a, &in.b, &in.c};
  for (int i = 0, k = 0; i < 4; ++i) {
    if (!(mask & (1u << i))) continue;
    const std::size_t at = kInstrHeaderBytes + kOperandBytes * static_cast<std::size_t>(k++);
    *ops[i] = decode_operand(h + at, pos + at);
  }
  return in;
}

Instruction decode(const std::vector<std::uint8_t>& bytes, std::size_t& pos) {
  const std::size_t available = pos < bytes.size() ? bytes.size() - pos : 0;
  const std::uint8_t* h = bytes.data() + std::min(pos, bytes.size());
  Instruction in = decode(h, available, pos);
  pos += encoded_length(h);
  return in;
}

std::vector<Instruction> decode_all(const std::vector<std::uint8_t>& bytes) {
  std::vector<Instruction> out;
  for (std::size_t pos = 0; pos < bytes.size();) out.push_back(decode(bytes, pos));
  return out;
}

// ------------------------------------------------------------ disassembly

std::string disassemble(const Instruction& in) {
  Text s;
  const auto out = std::back_inserter(s);
  const auto put = [&](std::string_view text) { s.append(text.data(), text.data() + text.size()); };
  fmt::format_to(out, FMT_COMPILE("{:<6} {}"), to_string(in.engine), to_string(in.opcode));
  // A register operand where the instruction names one, else its immediate.
  const auto operand_or = [&](const AccessPattern& reg, const char* name, float imm) {
    if (reg.valid()) put(name);
    else fmt::format_to(out, FMT_COMPILE("{}"), imm);
  };
  switch (in.opcode) {
    case Opcode::SemWait:
      fmt::format_to(out, FMT_COMPILE(" sem[{}] >= {}"), in.sem, in.value);
      return fmt::to_string(s);
    case Opcode::SemIncr:
      fmt::format_to(out, FMT_COMPILE(" sem[{}] += {}"), in.sem, in.value);
      return fmt::to_string(s);
    case Opcode::DmaTrigger:
      fmt::format_to(out, FMT_COMPILE(" dma{}.q{} {} descriptor(s) @0x{:x}"), in.dma_engine, in.dma_queue, in.value,
                     in.address);
      return fmt::to_string(s);
    case Opcode::SemSignal:
      fmt::format_to(out, FMT_COMPILE(" peer sem @0x{:x} += {}"), in.address, in.value);
      return fmt::to_string(s);
    case Opcode::LoadStationary:
      if (in.double_row()) put(" double_row");
      break;
    case Opcode::MultiplyMoving:
      if (in.double_row()) put(" double_row");
      if (in.accumulate()) put(" acc");
      break;
    case Opcode::TensorTensor:
    case Opcode::Reduce:
    case Opcode::PartitionReduce: fmt::format_to(out, FMT_COMPILE(" {}"), to_string(in.alu)); break;
    case Opcode::TensorScalar:
      fmt::format_to(out, FMT_COMPILE(" {} "), to_string(in.alu));
      operand_or(in.b, "b[p]", in.imm0);
      fmt::format_to(out, FMT_COMPILE(" {} "), to_string(in.alu2));
      operand_or(in.c, "c[p]", in.imm1);
      break;
    case Opcode::Memset: fmt::format_to(out, FMT_COMPILE(" {}"), in.imm0); break;
    case Opcode::Activation:
      fmt::format_to(out, FMT_COMPILE(" {} scale={} bias="), to_string(in.func), in.imm0);
      operand_or(in.b, "b", in.imm1);
      break;
    case Opcode::Iota:
      fmt::format_to(out, FMT_COMPILE(" base={} partition_step={} free_step={}"), in.imm0, in.imm1, in.imm2);
      break;
    default: break;
  }
  const auto pattern = [&](const char* name, const AccessPattern& p) {
    if (!p.valid()) return;
    fmt::format_to(out, FMT_COMPILE(" {}="), name);
    append_pattern(s, p);
  };
  pattern("dst", in.dst);
  pattern("a", in.a);
  pattern("b", in.b);
  pattern("c", in.c);
  return fmt::to_string(s);
}

std::string disassemble(const std::vector<std::uint8_t>& stream) {
  std::string out;
  for (std::size_t pos = 0; pos < stream.size();) {
    const std::size_t at = pos;
    out += fmt::format("{:6x}: {}\n", at, disassemble(decode(stream, pos)));
  }
  return out;
}

// -------------------------------------------------------------- validation

namespace {

struct Checker {
  const Instruction& in;
  const HwConfig& cfg;
  std::vector<std::string> problems;

  void fail(std::string msg) { problems.push_back(std::move(msg)); }

  std::int64_t partitions_of(Memory m) const { return m == Memory::Psum ? cfg.psum.partitions : cfg.sbuf.partitions; }
  std::int64_t bytes_per_partition(Memory m) const {
    return m == Memory::Psum ? cfg.psum.banks * cfg.psum.bank_kib * 1024 : cfg.sbuf.partition_kib * 1024;
  }

  // Rules every operand obeys, whatever the opcode.
  void operand(const char* role, const AccessPattern& ap) {
    if (!ap.valid()) return;
    if (ap.memory != Memory::Sbuf && ap.memory != Memory::Psum) {
      fail(fmt::format("{}: engines read and write SBUF and PSUM only, not {}", role, to_string(ap.memory)));
      return;
    }
    if (ap.partition_count == 0) fail(fmt::format("{}: partition count is 0", role));
    if (ap.start_partition + ap.partition_count > partitions_of(ap.memory))
      fail(fmt::format("{}: partitions {}..{} exceed the {} {} partitions", role, ap.start_partition,
                       ap.start_partition + ap.partition_count - 1, partitions_of(ap.memory), to_string(ap.memory)));
    if (ap.num_dims < 1 || ap.num_dims > kMaxFreeDims)
      fail(fmt::format("{}: {} free dimensions (1..{} allowed)", role, ap.num_dims, kMaxFreeDims));
    for (int d = 0; d < ap.num_dims; ++d)
      if (ap.size[d] == 0) fail(fmt::format("{}: free dimension {} has size 0", role, d));
    const auto [lo, hi] = ap.byte_extent();
    if (lo < 0 || hi > bytes_per_partition(ap.memory))
      fail(fmt::format("{}: bytes {}..{} of each partition fall outside {}'s {} bytes per partition", role, lo, hi - 1,
                       to_string(ap.memory), bytes_per_partition(ap.memory)));
    if (ap.memory == Memory::Psum && in.engine == Engine::GpSimd)
      fail(fmt::format("{}: the GpSimd engine cannot access PSUM", role));
    if (is_mx(ap.dtype) && in.engine != Engine::Tensor)
      fail(fmt::format("{}: {} tiles are read by the tensor engine (MX matmul) and moved by DMA only", role,
                       to_string(ap.dtype)));
  }

  void require(const char* role, const AccessPattern& ap) {
    if (!ap.valid()) fail(fmt::format("{} needs operand {}", to_string(in.opcode), role));
  }

  void same_shape(const char* r1, const AccessPattern& x, const char* r2, const AccessPattern& y) {
    if (!x.valid() || !y.valid()) return;
    if (x.partition_count != y.partition_count || x.free_elements() != y.free_elements())
      fail(fmt::format("{} [{} x {}] and {} [{} x {}] differ in shape", r1, x.partition_count, x.free_elements(), r2,
                       y.partition_count, y.free_elements()));
  }

  // A [P, 1] operand holding one scalar per partition of a.
  void per_partition_scalar(const char* role, const AccessPattern& ap) {
    if (!ap.valid() || !in.a.valid()) return;
    if (ap.partition_count != in.a.partition_count || ap.free_elements() != 1)
      fail(fmt::format("{} (per-partition scalar) must be [{} x 1], not [{} x {}]", role, in.a.partition_count,
                       ap.partition_count, ap.free_elements()));
  }

  // A tensor-engine input `ap` (with its MX scales `scale`, operand b) in a
  // format and mode the config declares; `transpose`: the Transpose
  // instruction, which takes bf16 or fp32 only.
  void tensor_input(const char* role, const AccessPattern& ap, const AccessPattern& scale, bool transpose = false) {
    if (!ap.valid()) return;
    if (ap.memory != Memory::Sbuf) fail(fmt::format("{}: the tensor engine reads its inputs from SBUF", role));
    const auto& t = cfg.tensor;
    const auto unsupported = [&](const char* what, const char* key, std::int64_t value) {
      fail(fmt::format("{}: {} inputs are not supported by this config's tensor engine (tensor.{} is {})", role, what,
                       key, value));
    };
    switch (ap.dtype) {
      case DType::Bf16: break;
      case DType::Fp32:
        if (t.fp32_cycles_per_column == 0) unsupported("fp32", "fp32_cycles_per_column", 0);
        break;
      case DType::Fp8E4m3:
      case DType::Fp8E5m2:
        if (t.fp8_rows_per_pe == 0) unsupported(to_string(ap.dtype), "fp8_rows_per_pe", 0);
        break;
      case DType::Fp8E4m3x4:
      case DType::Fp8E5m2x4:
      case DType::Fp4E2m1x4:
        if (t.mx_rows_per_pe == 0) unsupported(to_string(ap.dtype), "mx_rows_per_pe", 0);
        break;
      default:
        fail(fmt::format("{}: the tensor engine cannot read {}", role, to_string(ap.dtype)));
        return;
    }
    if (transpose && ap.dtype != DType::Bf16 && ap.dtype != DType::Fp32)
      fail(fmt::format("{}: Transpose takes bf16 or fp32 tiles, not {}", role, to_string(ap.dtype)));
    if (in.double_row()) {
      if (ap.dtype != DType::Fp8E4m3 && ap.dtype != DType::Fp8E5m2)
        fail(fmt::format("{}: double row multiplies fp8 (e4m3, e5m2) tiles, not {}", role, to_string(ap.dtype)));
      else if (t.fp8_rows_per_pe != 2)
        fail(fmt::format("{}: double row needs tensor.fp8_rows_per_pe 2; this config has {}", role,
                         t.fp8_rows_per_pe));
      if (ap.num_dims < 2 || ap.size[0] != 2)
        fail(fmt::format("{}: a double-row operand's outermost free dimension holds the two halves of the "
                         "contraction and must have size 2, not {}", role, ap.num_dims < 2 ? 1 : ap.size[0]));
    }
    if (is_mx(ap.dtype)) {
      if (!scale.valid()) {
        fail(fmt::format("{}: an MX ({}) operand needs its scale tile (operand b)", role, to_string(ap.dtype)));
      } else {
        if (scale.dtype != DType::Uint8)
          fail(fmt::format("b: MX scales are uint8 (E8M0) tiles, not {}", to_string(scale.dtype)));
        if (scale.memory != Memory::Sbuf) fail("b: the tensor engine reads MX scales from SBUF");
        if (scale.free_elements() != ap.free_elements())
          fail(fmt::format("b: {} scale columns for {} data columns (one scale per x4 element column)",
                           scale.free_elements(), ap.free_elements()));
        const std::size_t need = mx_scale_partitions(ap.partition_count);
        if (scale.partition_count < need)
          fail(fmt::format("b: {} data partitions take their scales from {} scale partitions (4 per 32-partition "
                           "quadrant), not {}", ap.partition_count, need, scale.partition_count));
        // A scale serves its data in the same SBUF quadrant: both start on
        // one quadrant's first partition.
        if (scale.start_partition != ap.start_partition)
          fail(fmt::format("b: MX scales start at their data's first partition ({}), not at partition {}",
                           ap.start_partition, scale.start_partition));
      }
      if (ap.partition_count % kMxGroupPartitions != 0)
        fail(fmt::format("{}: an MX operand spans whole scaling groups of {} partitions x {} elements; {} partitions "
                         "is not a multiple of {}", role, kMxGroupPartitions, kMxQuad, ap.partition_count,
                         kMxGroupPartitions));
      if (ap.start_partition % 32 != 0)
        fail(fmt::format("{}: an MX operand starts on a 32-partition SBUF quadrant (partition 0, 32, 64 or 96), not "
                         "at partition {}", role, ap.start_partition));
    } else if (scale.valid()) {
      fail(fmt::format("b: only MX operands take a scale tile, not {}", to_string(ap.dtype)));
    }
    if (ap.partition_count > t.rows)
      fail(fmt::format("{}: contraction over {} partitions exceeds the array's {} rows", role, ap.partition_count,
                       t.rows));
  }

  // Columns of a tensor input: the free size, halved for a double-row operand.
  std::uint64_t tensor_columns(const AccessPattern& ap) const {
    return in.double_row() ? ap.free_elements() / 2 : ap.free_elements();
  }

  void psum_result(const char* role, const AccessPattern& ap) {
    if (!ap.valid()) return;
    if (ap.memory != Memory::Psum) fail(fmt::format("{}: tensor-engine results go to PSUM", role));
    if (ap.dtype == DType::Bf16 && !cfg.tensor.psum_bf16)
      fail(fmt::format("{}: bf16 results in PSUM are not supported by this config's tensor engine (tensor.psum_bf16 "
                       "is false); use an fp32 PSUM tile", role));
    else if (ap.dtype != DType::Fp32 && ap.dtype != DType::Bf16)
      fail(fmt::format("{}: tensor-engine results are fp32{}, not {}", role, cfg.tensor.psum_bf16 ? " or bf16" : "",
                       to_string(ap.dtype)));
    const std::int64_t bank = cfg.psum.bank_kib * 1024;
    const auto [lo, hi] = ap.byte_extent();
    if (lo >= 0 && hi > lo && lo / bank != (hi - 1) / bank)
      fail(fmt::format("{}: bytes {}..{} cross a PSUM bank boundary (banks of {} bytes)", role, lo, hi - 1, bank));
  }

  void run() {
    if (!runs_on(in.opcode, in.engine))
      fail(fmt::format("{} does not run on the {} engine", to_string(in.opcode), to_string(in.engine)));
    operand("dst", in.dst);
    operand("a", in.a);
    operand("b", in.b);
    operand("c", in.c);
    switch (in.opcode) {
      case Opcode::Nop:
      case Opcode::End: break;
      case Opcode::SemWait:
      case Opcode::SemIncr:
        if (in.sem >= cfg.sync.semaphores)
          fail(fmt::format("semaphore {} does not exist (the config has {})", in.sem, cfg.sync.semaphores));
        break;
      case Opcode::DmaTrigger:
        if (in.dma_engine >= cfg.dma.engines)
          fail(fmt::format("DMA engine {} does not exist (the config has {})", in.dma_engine, cfg.dma.engines));
        if (in.dma_queue >= cfg.dma.queues_per_engine)
          fail(fmt::format("DMA queue {} does not exist (the config has {} per engine)", in.dma_queue,
                           cfg.dma.queues_per_engine));
        if (in.value == 0) fail("DmaTrigger of zero descriptors");
        break;
      case Opcode::SemSignal: {
        const AddressMap map(cfg);
        PeerAddress peer;
        const std::uint64_t core = in.address >= kPeerBase ? (in.address - kPeerBase) / kPeerStride : 0;
        if (in.address >= kPeerBase && core >= map.chip_cores && core < kMaxChipCores)
          fail(fmt::format("SemSignal: core {} does not exist (chip.cores is {})", core, map.chip_cores));
        else if (!map.decode_peer(in.address, kSemaphoreStride, peer) || peer.local < kSemaphoreBase ||
            in.address % kSemaphoreStride != 0)
          fail(fmt::format("SemSignal address 0x{:x} is not another core's semaphore ({})", in.address,
                           map.describe(in.address)));
        break;
      }
      case Opcode::LoadStationary:
        require("a", in.a);
        tensor_input("a", in.a, in.b);
        if (in.a.valid() && tensor_columns(in.a) > static_cast<std::uint64_t>(cfg.tensor.stationary_max_free))
          fail(fmt::format("a: stationary free size {} exceeds tensor.stationary_max_free {}", tensor_columns(in.a),
                           cfg.tensor.stationary_max_free));
        break;
      case Opcode::MultiplyMoving:
        require("dst", in.dst);
        require("a", in.a);
        tensor_input("a", in.a, in.b);
        psum_result("dst", in.dst);
        if (in.a.valid() && tensor_columns(in.a) > static_cast<std::uint64_t>(cfg.tensor.moving_max_free))
          fail(fmt::format("a: moving free size {} exceeds tensor.moving_max_free {}", tensor_columns(in.a),
                           cfg.tensor.moving_max_free));
        if (in.a.valid() && in.dst.valid() && in.dst.free_elements() != tensor_columns(in.a))
          fail(fmt::format("dst free size {} differs from the moving free size {}", in.dst.free_elements(),
                           tensor_columns(in.a)));
        if (in.dst.valid() && in.dst.partition_count > cfg.tensor.cols)
          fail(fmt::format("dst: {} result partitions exceed the array's {} columns", in.dst.partition_count,
                           cfg.tensor.cols));
        break;
      case Opcode::Transpose:
        require("dst", in.dst);
        require("a", in.a);
        tensor_input("a", in.a, in.b, true);
        if (in.double_row()) fail("Transpose has no double-row mode");
        psum_result("dst", in.dst);
        if (in.a.valid() && in.a.free_elements() > static_cast<std::uint64_t>(cfg.tensor.cols))
          fail(fmt::format("a: transposing {} columns exceeds the array's {} columns", in.a.free_elements(),
                           cfg.tensor.cols));
        if (in.a.valid() && in.dst.valid() &&
            (in.dst.partition_count != in.a.free_elements() || in.dst.free_elements() != in.a.partition_count))
          fail(fmt::format("dst [{} x {}] is not the transpose of a [{} x {}]", in.dst.partition_count,
                           in.dst.free_elements(), in.a.partition_count, in.a.free_elements()));
        break;
      case Opcode::TensorTensor:
        require("dst", in.dst);
        require("a", in.a);
        require("b", in.b);
        same_shape("dst", in.dst, "a", in.a);
        same_shape("dst", in.dst, "b", in.b);
        break;
      case Opcode::TensorScalar:
        require("dst", in.dst);
        require("a", in.a);
        same_shape("dst", in.dst, "a", in.a);
        per_partition_scalar("b", in.b);
        per_partition_scalar("c", in.c);
        break;
      case Opcode::Copy:
        require("dst", in.dst);
        require("a", in.a);
        same_shape("dst", in.dst, "a", in.a);
        break;
      case Opcode::Memset:
      case Opcode::Iota: require("dst", in.dst); break;
      case Opcode::Select:
        require("dst", in.dst);
        require("a", in.a);
        require("b", in.b);
        require("c", in.c);
        same_shape("dst", in.dst, "a", in.a);
        same_shape("dst", in.dst, "b", in.b);
        same_shape("dst", in.dst, "c", in.c);
        break;
      case Opcode::Reduce:
        require("dst", in.dst);
        require("a", in.a);
        if (in.dst.valid() && in.a.valid() &&
            (in.dst.partition_count != in.a.partition_count || in.dst.free_elements() != 1))
          fail(fmt::format("dst must be [{} x 1] for a free-axis reduction of a [{} x {}]", in.a.partition_count,
                           in.a.partition_count, in.a.free_elements()));
        break;
      case Opcode::PartitionReduce:
        require("dst", in.dst);
        require("a", in.a);
        if (in.dst.valid() && in.a.valid() &&
            (in.dst.partition_count != 1 || in.dst.free_elements() != in.a.free_elements()))
          fail(fmt::format("dst must be [1 x {}] for a partition reduction of a [{} x {}]", in.a.free_elements(),
                           in.a.partition_count, in.a.free_elements()));
        break;
      case Opcode::Activation:
        require("dst", in.dst);
        require("a", in.a);
        same_shape("dst", in.dst, "a", in.a);
        per_partition_scalar("b (bias)", in.b);
        per_partition_scalar("c (accumulate)", in.c);
        break;
    }
    if (in.engine == Engine::GpSimd && !cfg.gpsimd.present && in.opcode != Opcode::End)
      fail("this config has no GpSimd engine (gpsimd.present is false)");
  }
};

}  // namespace

std::vector<std::string> validate(const Instruction& in, const HwConfig& cfg) {
  Checker c{in, cfg, {}};
  c.run();
  return c.problems;
}

}  // namespace tessera::arch
