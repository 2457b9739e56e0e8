// The calls a kernel is written with: each checks its rules (naming the call
// and the rule), builds its instruction or DMA copy and hands it to the
// schedule. The parts live in builder/: what operations touch (region),
// their dependencies (hazards), SBUF/PSUM space (on_chip_space), DMA copies
// as descriptors (dma_lowering), placement on streams and queues (schedule)
// and the Program they become (program_assembly).
#include "tessera/kernel_builder.h"

#include "arch/address_map.h"
#include "arch/numerics.h"
#include "builder/call_name.h"
#include "builder/dma_lowering.h"
#include "builder/on_chip_space.h"
#include "builder/origins.h"
#include "builder/program_assembly.h"
#include "builder/region.h"
#include "builder/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace tessera {

using builder::CallName;
using builder::Region;
using builder::RegionList;
using builder::region_of;

struct KernelBuilder::Impl {
  const arch::HwConfig& cfg;
  arch::AddressMap map;
  std::string name;
  builder::OnChipSpace space;
  builder::Schedule schedule;
  std::vector<std::string> labels;
  int current_label = -1;
  std::vector<std::string> collective_labels;  // the labels collective_label() set, first use first
  builder::Origins origins;      // (label, call site) of the operations
  const char* site_file = "";    // the current call's SourceLocation
  std::uint32_t site_line = 0;
  std::optional<RegionList> stationary;  // what the weights now in the array were loaded from, while nothing overwrote it
  double matmul_flops = 0;
  std::map<arch::DType, double> matmul_flops_by_dtype;
  bool built = false;
  std::vector<builder::LoweredPiece> pieces;  // of the DMA copy being placed, reused
  DmaSpread spread;                           // of dma() calls that give none (set_dma_spread)
  Spmd spmd;
  std::vector<std::string> core_semaphores;  // by order of creation: index semaphores - 1 - i

  Impl(const arch::HwConfig& c, std::string n, const Spmd& s)
      : cfg(c), map(c), name(std::move(n)), space(c, map), schedule(c, map), spmd(s) {}

  // Core `core` is another core of the launch, and DMA reaches it.
  void check_other_core(const CallName& call, int core, bool by_dma) const {
    if (spmd.grid <= 1)
      throw KernelError(fmt::format("{}: this kernel is built for one core; a kernel that reaches other cores is built "
                                    "for an SPMD instance (KernelBuilder(cfg, name, spmd), Device::launch)",
                                    call.str()));
    if (core < 0 || core >= spmd.grid)
      throw KernelError(fmt::format("{}: core {} is outside the launch's {} cores (0 .. {})", call.str(), core,
                                    spmd.grid, spmd.grid - 1));
    if (core == spmd.instance)
      throw KernelError(fmt::format("{}: core {} is this core; within a core use dma() or copy()", call.str(), core));
    if (by_dma && arch::peer_dma_engines(cfg) == 0)
      throw KernelError(fmt::format("{}: no DMA engine of a {} core reaches another core's SBUF (chip.peer_dma_engines "
                                    "is 0); exchange through HBM instead",
                                    call.str(), cfg.name));
  }

  void check_semaphore(const CallName& call, const CoreSemaphore& sem) const {
    const auto i = static_cast<std::size_t>(static_cast<std::uint32_t>(cfg.sync.semaphores) - 1u - sem.index);
    if (sem.index >= static_cast<std::uint32_t>(cfg.sync.semaphores) || i >= core_semaphores.size() ||
        core_semaphores[i] != sem.name)
      throw KernelError(fmt::format("{}: semaphore '{}' was not made by this kernel's core_semaphore()", call.str(),
                                    sem.name));
  }

  // --- checks ---------------------------------------------------------------

  void check_live(const CallName& call) const {
    if (built) throw KernelError(fmt::format("{}: the kernel was already built", call.str()));
  }

  void check_tile(const CallName& call, const char* role, const Tile& t) const {
    if (!space.exists(t.id)) throw KernelError(fmt::format("{}: {} is not a tile of this kernel", call.str(), role));
    if (space[t.id].released)
      throw KernelError(fmt::format("{}: {} tile '{}' was released", call.str(), role, t.name));
  }

  void check_written(const CallName& call, const char* role, const Tile& t) const {
    check_tile(call, role, t);
    if (!space[t.id].written)
      throw KernelError(fmt::format("{}: reads {} tile '{}' before anything wrote it", call.str(), role, t.name));
  }

  // DMA descriptors and the tensor engine's operands address a tile as one
  // run per partition.
  void check_contiguous(const CallName& call, const char* role, const Tile& t) const {
    if (t.is_rows())
      throw KernelError(fmt::format("{}: {} tile '{}' is a view of rows (Tile::rows), which only the vector, scalar "
                                    "and GpSimd engines take",
                                    call.str(), role, t.name));
  }

  void check_instruction(const CallName& call, const arch::Instruction& in) const {
    const auto problems = arch::validate(in, cfg);
    if (!problems.empty()) throw KernelError(fmt::format("{}: {}", call.str(), problems.front()));
  }

  // --- placing operations -----------------------------------------------------

  // What every operation's accesses update besides its dependencies: the
  // lives of the tiles it touches, and whether the array's weights survive.
  void touched(int op, const RegionList& reads, const RegionList& writes) {
    for (const Region& r : reads) space.note_use(op, r);
    for (const Region& w : writes) space.note_use(op, w);
    for (const Region& w : writes)
      if (w.on_chip() && stationary &&
          std::any_of(stationary->begin(), stationary->end(), [&](const Region& s) { return s.overlaps(w); }))
        stationary.reset();
  }

  // The call being made, for the operations it places.
  void at(const SourceLocation& where) {
    site_file = where.file;
    site_line = where.line;
  }
  int origin() { return origins.of(current_label, site_file, site_line); }

  void emit(arch::Engine engine, const arch::Instruction& in, const RegionList& reads, const RegionList& writes) {
    const int op = schedule.add_instruction(engine, in, reads, writes, origin());
    touched(op, reads, writes);
  }

  // Places the pieces lowered into `pieces` on the engines `sp` names.
  void emit_pieces(const DmaSpread& sp) {
    for (const builder::LoweredPiece& piece : pieces) {
      const int op = schedule.add_dma(piece.descriptor, piece.read, piece.write, origin(), sp.first_engine,
                                      builder::spread_engines(sp, cfg));
      touched(op, {piece.read}, {piece.write});
    }
  }

  // A spread names engines the config has.
  void check_spread(const CallName& call, const DmaSpread& sp) const {
    const auto all = static_cast<std::uint32_t>(cfg.dma.engines);
    if (sp.first_engine >= all || sp.engines > all - sp.first_engine)
      throw KernelError(fmt::format("{}: DMA spread over engines {}..{}; the config has engines 0..{} (dma.engines {})",
                                    call.str(), sp.first_engine,
                                    sp.engines > 0 ? std::uint64_t{sp.first_engine} + sp.engines - 1 : all - 1,
                                    all - 1, all));
  }

  void written(const Tile& t) { space[t.id].written = true; }

  // HBM -> SBUF; pitch 0: the view fills the tile, else its rows land
  // `pitch` elements apart (the pitched form's own rules are checked by then).
  void dma_to_tile(const Tile& dst, const View& src, std::uint32_t pitch, const DmaSpread& sp) {
    const auto call = [&] {
      return fmt::format("dma(tile '{}' <- tensor '{}')", dst.name, src.tensor ? src.tensor->name : "?");
    };
    check_live(call);
    check_spread(call, sp);
    check_tile(call, "destination", dst);
    check_contiguous(call, "destination", dst);
    if (!src.tensor) throw KernelError(fmt::format("{}: the source view has no tensor", call()));
    if (dst.memory != arch::Memory::Sbuf)
      throw KernelError(fmt::format("{}: DMA moves HBM tensors to SBUF tiles", call()));
    if (dst.dtype != src.tensor->dtype)
      throw KernelError(fmt::format("{}: DMA does not convert: tile is {}, tensor is {}", call(), to_string(dst.dtype),
                                    to_string(src.tensor->dtype)));
    // A pitched copy fills rows x columns of each partition, row r at element r * pitch.
    if (src.sizes.empty() || src.sizes[0] != dst.partitions ||
        (pitch == 0 && src.elements() != std::int64_t{dst.partitions} * dst.free))
      throw KernelError(fmt::format("{}: view [{}] does not fill tile [{} x {}] (the view's first dimension lies on "
                                    "partitions)",
                                    call(), fmt::join(src.sizes, " x "), dst.partitions, dst.free));
    builder::lower({builder::DmaCopy::Direction::ToTile, &dst, &src, pitch}, sp, cfg, map, call, pieces);
    emit_pieces(sp);
    written(dst);
  }

  // SBUF -> HBM.
  void dma_from_tile(const View& dst, const Tile& src, const DmaSpread& sp) {
    const auto call = [&] {
      return fmt::format("dma(tensor '{}' <- tile '{}')", dst.tensor ? dst.tensor->name : "?", src.name);
    };
    check_live(call);
    check_spread(call, sp);
    check_written(call, "source", src);
    check_contiguous(call, "source", src);
    if (!dst.tensor) throw KernelError(fmt::format("{}: the destination view has no tensor", call()));
    if (src.memory != arch::Memory::Sbuf)
      throw KernelError(fmt::format("{}: DMA moves SBUF tiles to HBM tensors", call()));
    if (src.dtype != dst.tensor->dtype)
      throw KernelError(fmt::format("{}: DMA does not convert: tile is {}, tensor is {}", call(), to_string(src.dtype),
                                    to_string(dst.tensor->dtype)));
    if (dst.sizes.empty() || dst.sizes[0] != src.partitions || dst.elements() != std::int64_t{src.partitions} * src.free)
      throw KernelError(fmt::format("{}: view [{}] does not match tile [{} x {}] (the view's first dimension lies on "
                                    "partitions)",
                                    call(), fmt::join(dst.sizes, " x "), src.partitions, src.free));
    builder::lower({builder::DmaCopy::Direction::FromTile, &src, &dst, 0}, sp, cfg, map, call, pieces);
    emit_pieces(sp);
  }
};

KernelBuilder::KernelBuilder(const arch::HwConfig& cfg, std::string kernel_name)
    : KernelBuilder(cfg, std::move(kernel_name), Spmd{}) {}

KernelBuilder::KernelBuilder(const arch::HwConfig& cfg, std::string kernel_name, const Spmd& spmd)
    : cfg_(cfg), impl_(std::make_unique<Impl>(cfg, std::move(kernel_name), spmd)) {
  if (spmd.grid < 1 || spmd.instance < 0 || spmd.instance >= spmd.grid)
    throw KernelError(fmt::format("KernelBuilder('{}'): instance {} of a grid of {}: no such instance", impl_->name,
                                  spmd.instance, spmd.grid));
}

KernelBuilder::~KernelBuilder() = default;

// --------------------------------------------------------------------- tiles

Tile KernelBuilder::sbuf(const std::string& name, std::uint32_t partitions, std::uint32_t free, DType dtype) {
  const auto call = [&] { return fmt::format("sbuf('{}', {}, {}, {})", name, partitions, free, to_string(dtype)); };
  impl_->check_live(call);
  if (partitions == 0 || free == 0) throw KernelError(fmt::format("{}: a tile needs at least one element", call()));
  if (partitions > static_cast<std::uint32_t>(cfg_.sbuf.partitions))
    throw KernelError(fmt::format("{}: {} partitions; SBUF has {} (a tile spans at most that many)", call(),
                                  partitions, cfg_.sbuf.partitions));
  const auto t = impl_->space.allocate(arch::Memory::Sbuf, name, partitions, free, dtype);
  if (!t) {
    const auto& a = impl_->space.allocator(arch::Memory::Sbuf);
    throw KernelError(fmt::format("{}: SBUF overflow: needs {} bytes per partition, {} of {} free (largest block {})",
                                  call(), std::uint64_t{free} * arch::size_of(dtype), a.free_bytes(), a.limit(),
                                  a.largest()));
  }
  return *t;
}

Tile KernelBuilder::psum(const std::string& name, std::uint32_t partitions, std::uint32_t free, DType dtype) {
  const auto call = [&] { return fmt::format("psum('{}', {}, {}, {})", name, partitions, free, to_string(dtype)); };
  impl_->check_live(call);
  if (partitions == 0 || free == 0) throw KernelError(fmt::format("{}: a tile needs at least one element", call()));
  if (partitions > static_cast<std::uint32_t>(cfg_.psum.partitions))
    throw KernelError(fmt::format("{}: {} partitions; PSUM has {}", call(), partitions, cfg_.psum.partitions));
  const std::uint64_t bytes = std::uint64_t{free} * arch::size_of(dtype);
  const std::uint64_t bank = static_cast<std::uint64_t>(cfg_.psum.bank_kib) * 1024;
  if (bytes > bank)
    throw KernelError(fmt::format("{}: {} bytes per partition overrun a PSUM bank of {} bytes ({} fp32)", call(),
                                  bytes, bank, bank / 4));
  const auto t = impl_->space.allocate(arch::Memory::Psum, name, partitions, free, dtype);
  if (!t) {
    const auto& a = impl_->space.allocator(arch::Memory::Psum);
    throw KernelError(fmt::format("{}: PSUM full: needs {} bytes in one bank, {} of {} bytes free", call(), bytes,
                                  a.free_bytes(), a.limit()));
  }
  return *t;
}

void KernelBuilder::release(const Tile& t) {
  impl_->check_tile([&] { return fmt::format("release('{}')", t.name); }, "the", t);
  impl_->space.release(t);
}

// ----------------------------------------------------------------------- DMA

void KernelBuilder::dma(const Tile& dst, const View& src, SourceLocation where) {
  impl_->at(where);
  impl_->dma_to_tile(dst, src, 0, impl_->spread);
}

void KernelBuilder::dma(const Tile& dst, const View& src, const DmaSpread& spread, SourceLocation where) {
  impl_->at(where);
  impl_->dma_to_tile(dst, src, 0, spread);
}

void KernelBuilder::set_dma_spread(const DmaSpread& spread) {
  const auto call = [] { return std::string("set_dma_spread"); };
  impl_->check_spread(call, spread);
  impl_->spread = spread;
}

void KernelBuilder::dma(const Tile& dst, const View& src, std::uint32_t pitch, SourceLocation where) {
  impl_->at(where);
  const std::string call = fmt::format("dma(tile '{}' <- tensor '{}', pitch {})", dst.name,
                                       src.tensor ? src.tensor->name : "?", pitch);
  if (pitch == 0) throw KernelError(fmt::format("{}: the row pitch must be positive", call));
  if (src.sizes.size() != 3)
    throw KernelError(fmt::format("{}: a pitched copy takes a view of [partitions x rows x columns], not [{}]", call,
                                  fmt::join(src.sizes, " x ")));
  if (src.sizes[2] > pitch)
    throw KernelError(fmt::format("{}: rows of {} elements overlap at a pitch of {}", call, src.sizes[2], pitch));
  if ((src.sizes[1] - 1) * pitch + src.sizes[2] > dst.free)
    throw KernelError(fmt::format("{}: {} rows at a pitch of {} overrun the tile's {} elements", call, src.sizes[1],
                                  pitch, dst.free));
  impl_->dma_to_tile(dst, src, pitch, impl_->spread);
}

void KernelBuilder::dma(const View& dst, const Tile& src, SourceLocation where) {
  impl_->at(where);
  impl_->dma_from_tile(dst, src, impl_->spread);
}

void KernelBuilder::dma(const View& dst, const Tile& src, const DmaSpread& spread, SourceLocation where) {
  impl_->at(where);
  impl_->dma_from_tile(dst, src, spread);
}

// ------------------------------------------------------------- tensor engine

MatmulInput MatmulInput::double_row(const Tile& lower, const Tile& upper) {
  MatmulInput in(lower);
  in.upper = upper;
  return in;
}

MatmulInput MatmulInput::mx(const Tile& data, const Tile& scale) {
  MatmulInput in(data);
  in.scale = scale;
  return in;
}

namespace {

// An input as the array takes it: its pattern (the two halves of a double-row
// input as one outer dimension of size 2), its scales, what it reads, and its
// format and mode for the pairing rule (arch::incompatible).
struct ArrayInput {
  arch::AccessPattern data, scale;
  RegionList reads;
  arch::TensorOperand shape;  // format and mode; no values
  std::uint32_t columns = 0;  // M (stationary) or N (moving)
  std::uint32_t contraction = 0;
};

}  // namespace

void KernelBuilder::matmul(const Tile& psum, const Tile& stationary, const Tile& moving, bool accumulate,
                           SourceLocation where) {
  matmul(psum, MatmulInput(stationary), MatmulInput(moving), accumulate, where);
}

void KernelBuilder::matmul(const Tile& psum, const MatmulInput& stationary, const MatmulInput& moving,
                           bool accumulate, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] {
    return fmt::format("matmul(psum '{}', stationary '{}', moving '{}')", psum.name, stationary.tile.name,
                       moving.tile.name);
  };
  impl_->check_live(call);
  const auto input = [&](const char* role, const MatmulInput& in) {
    const Tile& t = in.tile;
    impl_->check_written(call, role, t);
    impl_->check_contiguous(call, role, t);
    if (in.upper) impl_->check_contiguous(call, role, *in.upper);
    if (in.scale) impl_->check_contiguous(call, role, *in.scale);
    ArrayInput a;
    a.data = t.pattern();
    a.reads.push_back(region_of(t));
    a.columns = t.free;
    const auto format = arch::element_format(t.dtype);
    if (!format)
      throw KernelError(fmt::format("{}: {} tile '{}' is {}, which the tensor engine cannot read", call(), role,
                                    t.name, to_string(t.dtype)));
    if (in.upper && in.scale)
      throw KernelError(fmt::format("{}: {} is given both an upper half (double row) and a scale tile (MX)", call(),
                                    role));
    int pack = 1;
    if (in.upper) {
      const Tile& u = *in.upper;
      impl_->check_written(call, role, u);
      if (u.dtype != t.dtype || u.partition != t.partition || u.partitions != t.partitions || u.free != t.free ||
          u.memory != t.memory)
        throw KernelError(fmt::format("{}: double row: the {} halves '{}' [{} x {}] {} and '{}' [{} x {}] {} must "
                                      "have one dtype and shape in the same partitions",
                                      call(), role, t.name, t.partitions, t.free, to_string(t.dtype), u.name,
                                      u.partitions, u.free, to_string(u.dtype)));
      const std::int64_t step = static_cast<std::int64_t>(u.offset) - static_cast<std::int64_t>(t.offset);
      const std::int64_t esize = arch::size_of(t.dtype);
      if (step % esize != 0 || std::llabs(step) < static_cast<std::int64_t>(t.free) * esize)
        throw KernelError(fmt::format("{}: double row: the {} halves '{}' and '{}' overlap", call(), role, t.name,
                                      u.name));
      a.data.num_dims = 2;
      a.data.size = {2, t.free, 0, 0};
      a.data.stride = {static_cast<std::int32_t>(step / esize), 1, 0, 0};
      a.reads.push_back(region_of(u));
      pack = 2;
    }
    if (arch::is_mx(t.dtype) && !in.scale)
      throw KernelError(fmt::format("{}: {} tile '{}' is {} (MX) and needs its scale tile: MatmulInput::mx(data, "
                                    "scale)", call(), role, t.name, to_string(t.dtype)));
    if (in.scale && !arch::is_mx(t.dtype))
      throw KernelError(fmt::format("{}: {} tile '{}' is {}; only MX (x4) tiles take a scale tile", call(), role,
                                    t.name, to_string(t.dtype)));
    if (in.scale) {
      impl_->check_written(call, role, *in.scale);
      a.scale = in.scale->pattern();
      a.reads.push_back(region_of(*in.scale));
    }
    if (arch::is_mx(t.dtype)) pack = arch::kMxQuad;
    a.shape = arch::TensorOperand(*format, pack, arch::is_mx(t.dtype), 0, 0);
    a.contraction = t.partitions * static_cast<std::uint32_t>(pack);
    return a;
  };
  const ArrayInput st = input("stationary", stationary);
  const ArrayInput mv = input("moving", moving);
  impl_->check_tile(call, "psum", psum);
  impl_->check_contiguous(call, "psum", psum);
  if (accumulate) impl_->check_written(call, "psum (accumulate)", psum);
  if (const auto why = arch::incompatible(st.shape, mv.shape))
    throw KernelError(fmt::format("{}: the tensor engine cannot multiply these inputs together: {}", call(), *why));
  if (moving.tile.partitions != stationary.tile.partitions)
    throw KernelError(fmt::format("{}: contraction mismatch: stationary has {} partitions, moving {}", call(),
                                  stationary.tile.partitions, moving.tile.partitions));
  if (psum.partitions != st.columns || psum.free != mv.columns)
    throw KernelError(fmt::format("{}: psum is [{} x {}], the product is [{} x {}]", call(), psum.partitions,
                                  psum.free, st.columns, mv.columns));
  const bool double_row = stationary.upper.has_value();
  const std::uint8_t mode = double_row ? arch::kFlagDoubleRow : 0;
  if (!impl_->stationary || !(*impl_->stationary == st.reads)) {
    arch::Instruction ls;
    ls.engine = arch::Engine::Tensor;
    ls.opcode = arch::Opcode::LoadStationary;
    ls.flags = mode;
    ls.a = st.data;
    ls.b = st.scale;
    impl_->check_instruction(call, ls);
    impl_->emit(arch::Engine::Tensor, ls, st.reads, {});
    impl_->stationary = st.reads;
  }
  arch::Instruction mm;
  mm.engine = arch::Engine::Tensor;
  mm.opcode = arch::Opcode::MultiplyMoving;
  mm.flags = static_cast<std::uint8_t>((accumulate ? arch::kFlagAccumulate : 0) | mode);
  mm.a = mv.data;
  mm.b = mv.scale;
  mm.dst = psum.pattern();
  impl_->check_instruction(call, mm);
  RegionList reads = mv.reads;
  if (accumulate) reads.push_back(region_of(psum));
  impl_->emit(arch::Engine::Tensor, mm, reads, {region_of(psum)});
  impl_->written(psum);
  const double flops = 2.0 * st.contraction * st.columns * mv.columns;
  impl_->matmul_flops += flops;
  impl_->matmul_flops_by_dtype[stationary.tile.dtype] += flops;
}

void KernelBuilder::transpose(const Tile& psum, const Tile& src, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] { return fmt::format("transpose(psum '{}', '{}')", psum.name, src.name); };
  impl_->check_live(call);
  impl_->check_written(call, "source", src);
  impl_->check_tile(call, "psum", psum);
  impl_->check_contiguous(call, "source", src);
  impl_->check_contiguous(call, "psum", psum);
  arch::Instruction in;
  in.engine = arch::Engine::Tensor;
  in.opcode = arch::Opcode::Transpose;
  in.a = src.pattern();
  in.dst = psum.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Tensor, in, {region_of(src)}, {region_of(psum)});
  impl_->stationary.reset();  // the transpose replaced the array's weights
  impl_->written(psum);
}

// ------------------------------------------------------- vector, scalar, gpsimd

namespace {

arch::Instruction instr(arch::Engine e, arch::Opcode op, const Tile& dst) {
  arch::Instruction in;
  in.engine = e;
  in.opcode = op;
  in.dst = dst.pattern();
  return in;
}

}  // namespace

void KernelBuilder::tensor_tensor(const Tile& dst, const Tile& a, const Tile& b, arch::AluOp op,
                                  SourceLocation where) {
  impl_->at(where);
  const auto call = [&] {
    return fmt::format("tensor_tensor('{}' = '{}' {} '{}')", dst.name, a.name, to_string(op), b.name);
  };
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "a", a);
  impl_->check_written(call, "b", b);
  auto in = instr(arch::Engine::Vector, arch::Opcode::TensorTensor, dst);
  in.alu = op;
  in.a = a.pattern();
  in.b = b.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Vector, in, {region_of(a), region_of(b)}, {region_of(dst)});
  impl_->written(dst);
}

void KernelBuilder::tensor_scalar(const Tile& dst, const Tile& a, arch::AluOp op, float s, arch::AluOp op2, float s2,
                                  arch::Engine engine, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] { return fmt::format("tensor_scalar('{}' = '{}' {} {})", dst.name, a.name, to_string(op), s); };
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "a", a);
  auto in = instr(engine, arch::Opcode::TensorScalar, dst);
  in.alu = op;
  in.imm0 = s;
  in.alu2 = op2;
  in.imm1 = s2;
  in.a = a.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(engine, in, {region_of(a)}, {region_of(dst)});
  impl_->written(dst);
}

void KernelBuilder::tensor_scalar(const Tile& dst, const Tile& a, arch::AluOp op, const Tile& s, arch::AluOp op2,
                                  const Tile* s2, float s2_value, arch::Engine engine, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] {
    return fmt::format("tensor_scalar('{}' = '{}' {} '{}'[p])", dst.name, a.name, to_string(op), s.name);
  };
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "a", a);
  impl_->check_written(call, "scalar", s);
  auto in = instr(engine, arch::Opcode::TensorScalar, dst);
  in.alu = op;
  in.alu2 = op2;
  in.imm1 = s2_value;
  in.a = a.pattern();
  in.b = s.pattern();
  RegionList reads{region_of(a), region_of(s)};
  if (s2) {
    impl_->check_written(call, "second scalar", *s2);
    in.c = s2->pattern();
    reads.push_back(region_of(*s2));
  }
  impl_->check_instruction(call, in);
  impl_->emit(engine, in, reads, {region_of(dst)});
  impl_->written(dst);
}

void KernelBuilder::tensor_scalar(const Tile& dst, const Tile& a, arch::AluOp op, float s, arch::AluOp op2,
                                  const Tile& s2, arch::Engine engine, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] {
    return fmt::format("tensor_scalar('{}' = '{}' {} {} {} '{}')", dst.name, a.name, to_string(op), s, to_string(op2),
                       s2.name);
  };
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "a", a);
  impl_->check_written(call, "second scalar", s2);
  auto in = instr(engine, arch::Opcode::TensorScalar, dst);
  in.alu = op;
  in.imm0 = s;
  in.alu2 = op2;
  in.a = a.pattern();
  in.c = s2.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(engine, in, {region_of(a), region_of(s2)}, {region_of(dst)});
  impl_->written(dst);
}

void KernelBuilder::reduce(const Tile& dst, const Tile& a, arch::AluOp op, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] { return fmt::format("reduce('{}' = {}('{}'))", dst.name, to_string(op), a.name); };
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "a", a);
  auto in = instr(arch::Engine::Vector, arch::Opcode::Reduce, dst);
  in.alu = op;
  in.a = a.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Vector, in, {region_of(a)}, {region_of(dst)});
  impl_->written(dst);
}

void KernelBuilder::copy(const Tile& dst, const Tile& src, arch::Engine engine, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] { return fmt::format("copy('{}' = '{}' on {})", dst.name, src.name, to_string(engine)); };
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "source", src);
  auto in = instr(engine, arch::Opcode::Copy, dst);
  in.a = src.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(engine, in, {region_of(src)}, {region_of(dst)});
  impl_->written(dst);
}

void KernelBuilder::memset(const Tile& dst, float value, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] { return fmt::format("memset('{}', {})", dst.name, value); };
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  auto in = instr(arch::Engine::Vector, arch::Opcode::Memset, dst);
  in.imm0 = value;
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Vector, in, {}, {region_of(dst)});
  impl_->written(dst);
}

void KernelBuilder::select(const Tile& dst, const Tile& pred, const Tile& a, const Tile& b, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] {
    return fmt::format("select('{}' = '{}' ? '{}' : '{}')", dst.name, pred.name, a.name, b.name);
  };
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "pred", pred);
  impl_->check_written(call, "a", a);
  impl_->check_written(call, "b", b);
  auto in = instr(arch::Engine::Vector, arch::Opcode::Select, dst);
  in.a = a.pattern();
  in.b = b.pattern();
  in.c = pred.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Vector, in, {region_of(a), region_of(b), region_of(pred)}, {region_of(dst)});
  impl_->written(dst);
}

void KernelBuilder::activation(const Tile& dst, const Tile& src, arch::ActFunc f, float scale, float bias,
                               const Tile* bias_tile, const Tile* accumulate, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] { return fmt::format("activation('{}' = {}('{}'))", dst.name, to_string(f), src.name); };
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "source", src);
  auto in = instr(arch::Engine::Scalar, arch::Opcode::Activation, dst);
  in.func = f;
  in.imm0 = scale;
  in.imm1 = bias;
  in.a = src.pattern();
  RegionList reads{region_of(src)};
  RegionList writes{region_of(dst)};
  if (bias_tile) {
    impl_->check_written(call, "bias", *bias_tile);
    in.b = bias_tile->pattern();
    reads.push_back(region_of(*bias_tile));
  }
  if (accumulate) {
    impl_->check_tile(call, "accumulate", *accumulate);
    in.c = accumulate->pattern();
    writes.push_back(region_of(*accumulate));
  }
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::Scalar, in, reads, writes);
  impl_->written(dst);
  if (accumulate) impl_->written(*accumulate);
}

void KernelBuilder::iota(const Tile& dst, float base, float partition_step, float free_step, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] { return fmt::format("iota('{}')", dst.name); };
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  auto in = instr(arch::Engine::GpSimd, arch::Opcode::Iota, dst);
  in.imm0 = base;
  in.imm1 = partition_step;
  in.imm2 = free_step;
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::GpSimd, in, {}, {region_of(dst)});
  impl_->written(dst);
}

void KernelBuilder::partition_reduce(const Tile& dst, const Tile& src, arch::AluOp op, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] { return fmt::format("partition_reduce('{}' = {}('{}'))", dst.name, to_string(op), src.name); };
  impl_->check_live(call);
  impl_->check_tile(call, "destination", dst);
  impl_->check_written(call, "source", src);
  auto in = instr(arch::Engine::GpSimd, arch::Opcode::PartitionReduce, dst);
  in.alu = op;
  in.a = src.pattern();
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::GpSimd, in, {region_of(src)}, {region_of(dst)});
  impl_->written(dst);
}

// --------------------------------------------------------------- other cores

const Spmd& KernelBuilder::spmd() const { return impl_->spmd; }

CoreSemaphore KernelBuilder::core_semaphore(const std::string& name) {
  const auto call = [&] { return fmt::format("core_semaphore('{}')", name); };
  impl_->check_live(call);
  for (const std::string& n : impl_->core_semaphores)
    if (n == name) throw KernelError(fmt::format("{}: the kernel already has a semaphore of that name", call()));
  // From the top down: the builder's own semaphores (one per engine and
  // queue) count up from 0; build() checks that the two never meet.
  const std::size_t taken = impl_->core_semaphores.size();
  if (taken + arch::kNumEngines >= static_cast<std::size_t>(cfg_.sync.semaphores))
    throw KernelError(fmt::format("{}: the config's {} semaphores are all taken", call(), cfg_.sync.semaphores));
  impl_->core_semaphores.push_back(name);
  return {static_cast<std::uint16_t>(cfg_.sync.semaphores - 1 - static_cast<std::int64_t>(taken)), name};
}

void KernelBuilder::dma_to_core(int core, const Tile& dst, const Tile& src, const CoreSemaphore& done,
                                SourceLocation where) {
  impl_->at(where);
  const auto call = [&] {
    return fmt::format("dma_to_core({}, tile '{}' <- tile '{}', '{}')", core, dst.name, src.name, done.name);
  };
  impl_->check_live(call);
  impl_->check_other_core(call, core, true);
  impl_->check_semaphore(call, done);
  impl_->check_written(call, "source", src);
  impl_->check_tile(call, "destination", dst);
  impl_->check_contiguous(call, "source", src);
  impl_->check_contiguous(call, "destination", dst);
  if (src.memory != arch::Memory::Sbuf || dst.memory != arch::Memory::Sbuf)
    throw KernelError(fmt::format("{}: a copy to another core moves an SBUF tile to an SBUF tile", call()));
  if (src.dtype != dst.dtype || src.partitions != dst.partitions || src.free != dst.free)
    throw KernelError(fmt::format("{}: the tiles differ: source [{} x {}] {}, destination [{} x {}] {}", call(),
                                  src.partitions, src.free, to_string(src.dtype), dst.partitions, dst.free,
                                  to_string(dst.dtype)));
  const auto peer = static_cast<std::uint64_t>(core);
  builder::lower_to_core(src, dst, peer, cfg_, impl_->map, call, impl_->pieces);
  const auto engines = static_cast<std::uint32_t>(arch::peer_dma_engines(cfg_));
  for (const builder::LoweredPiece& piece : impl_->pieces) {
    const int op = impl_->schedule.add_dma(piece.descriptor, piece.read, piece.write, impl_->origin(), 0, engines);
    impl_->touched(op, {piece.read}, {piece.write});
  }
  // The increment follows every piece (it reads what they wrote).
  arch::Instruction in;
  in.engine = arch::Engine::GpSimd;
  in.opcode = arch::Opcode::SemSignal;
  in.address = impl_->map.peer_semaphore_address(peer, done.index);
  in.value = 1;
  impl_->check_instruction(call, in);
  impl_->emit(arch::Engine::GpSimd, in, {builder::remote_region(dst, peer, impl_->map, 0, dst.partitions)}, {});
}

void KernelBuilder::signal_core(int core, const CoreSemaphore& sem, const Tile& after, arch::Engine engine,
                                SourceLocation where) {
  impl_->at(where);
  const auto call = [&] { return fmt::format("signal_core({}, '{}', after tile '{}')", core, sem.name, after.name); };
  impl_->check_live(call);
  impl_->check_other_core(call, core, false);
  impl_->check_semaphore(call, sem);
  impl_->check_tile(call, "after", after);
  arch::Instruction in;
  in.engine = engine;
  in.opcode = arch::Opcode::SemSignal;
  in.address = impl_->map.peer_semaphore_address(static_cast<std::uint64_t>(core), sem.index);
  in.value = 1;
  impl_->check_instruction(call, in);
  // As a write of the tile, it follows every earlier read and write of it.
  impl_->emit(engine, in, {}, {region_of(after)});
}

void KernelBuilder::wait_core(const CoreSemaphore& sem, std::uint32_t count, const Tile& tile, int core,
                              arch::Engine engine, SourceLocation where) {
  impl_->at(where);
  const auto call = [&] {
    return core < 0 ? fmt::format("wait_core('{}' >= {}, tile '{}')", sem.name, count, tile.name)
                    : fmt::format("wait_core('{}' >= {}, tile '{}' of core {})", sem.name, count, tile.name, core);
  };
  impl_->check_live(call);
  if (core >= 0 || core < -1) impl_->check_other_core(call, core, false);
  impl_->check_semaphore(call, sem);
  impl_->check_tile(call, "guarded", tile);
  if (count == 0) throw KernelError(fmt::format("{}: a wait for 0 raises waits for nothing", call()));
  arch::Instruction in;
  in.engine = engine;
  in.opcode = arch::Opcode::SemWait;
  in.sem = sem.index;
  in.value = count;
  impl_->check_instruction(call, in);
  // As a write of what it guards, later operations on it follow the wait.
  const builder::Region guarded = core < 0 ? region_of(tile)
                                           : builder::remote_region(tile, static_cast<std::uint64_t>(core),
                                                                    impl_->map, 0, tile.partitions);
  impl_->emit(engine, in, {}, {guarded});
  if (core < 0) impl_->written(tile);
}

// --------------------------------------------------------------------- build

void KernelBuilder::label(const std::string& text) {
  impl_->check_live([&] { return fmt::format("label('{}')", text); });
  if (text.empty()) {
    impl_->current_label = -1;
    return;
  }
  if (impl_->current_label >= 0 && impl_->labels[static_cast<std::size_t>(impl_->current_label)] == text) return;
  impl_->labels.push_back(text);
  impl_->current_label = static_cast<int>(impl_->labels.size()) - 1;
}

void KernelBuilder::collective_label(const std::string& text) {
  label(text);
  if (!text.empty() && std::find(impl_->collective_labels.begin(), impl_->collective_labels.end(), text) ==
                           impl_->collective_labels.end())
    impl_->collective_labels.push_back(text);
}

Program KernelBuilder::build() {
  impl_->check_live([] { return std::string("build()"); });
  impl_->built = true;
  const std::size_t own = arch::kNumEngines + impl_->schedule.queues().size();
  const std::size_t reserved = impl_->core_semaphores.size();
  if (reserved > 0 && own + reserved > static_cast<std::size_t>(cfg_.sync.semaphores))
    throw KernelError(fmt::format("build(): needs {} semaphores (5 engines + {} DMA queues + {} raised by other "
                                  "cores); the config has {}",
                                  own + reserved, impl_->schedule.queues().size(), reserved, cfg_.sync.semaphores));
  Program p = builder::assemble(cfg_, impl_->schedule, impl_->labels, impl_->origins, impl_->space.allocations());
  p.collective_labels = impl_->collective_labels;
  for (std::size_t i = 0; i < reserved; ++i)
    p.core_semaphores.emplace_back(static_cast<std::uint16_t>(cfg_.sync.semaphores - 1 - static_cast<std::int64_t>(i)),
                                   impl_->core_semaphores[i]);
  p.name = impl_->name;
  p.matmul_flops = impl_->matmul_flops;
  p.matmul_flops_by_dtype = impl_->matmul_flops_by_dtype;
  return p;
}

}  // namespace tessera
