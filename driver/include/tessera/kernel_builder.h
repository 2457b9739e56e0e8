// KernelBuilder: where a kernel is written, tile by tile, in the spirit of
// NKI. Allocate SBUF/PSUM tiles, move data with dma(), compute with one call
// per engine instruction, loop in plain C++. The builder checks every rule
// when the call is made (naming the call and the rule), tracks what each
// instruction reads and writes, and inserts the semaphore waits and
// increments between engines and DMA queues, so a kernel never places one.
#pragma once

#include "arch/config.h"
#include "tessera/program.h"
#include "tessera/tensor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera {

// Where a KernelBuilder call was made. Every call that makes instructions or
// DMAs takes one as its last argument, defaulted to the caller's file and
// line, so profiles and run-time errors name the kernel's source line. A
// kernel that wraps builder calls in helpers of its own can pass its
// caller's location down (a default argument `SourceLocation where =
// SourceLocation::current()` on the helper); a binding can pass the file
// and line of its own caller.
struct SourceLocation {
  const char* file = "";
  std::uint32_t line = 0;
  static constexpr SourceLocation current(const char* file = __builtin_FILE(), std::uint32_t line = __builtin_LINE()) {
    return {file, line};
  }
};

// One input of a matmul: a tile, or one of the narrow formats' fast modes
// (docs/formats.md). A plain Tile converts to one.
//  - double row (fp8 on configs with tensor.fp8_rows_per_pe 2): two fp8 tiles
//    of one shape and dtype in the same partitions, `lower` holding the
//    contraction rows [0, P) and `upper` the rows [P, 2P); the array reads
//    both in one pass, twice the work of a single-row matmul.
//  - MX (tensor.mx_rows_per_pe 4): an x4 tile (fp8_e4m3_x4, fp8_e5m2_x4,
//    fp4_e2m1_x4: four contraction rows per partition) and its uint8 tile of
//    E8M0 scales, one per scaling group of 8 partitions x 4 rows, laid out
//    as arch::mx_scale_partition says.
struct MatmulInput {
  Tile tile;                  // the data; the lower half in double row
  std::optional<Tile> upper;  // double row: contraction rows [P, 2P)
  std::optional<Tile> scale;  // MX: the E8M0 scales of `tile`

  MatmulInput(const Tile& t) : tile(t) {}  // NOLINT: implicit, a tile is a plain input
  static MatmulInput double_row(const Tile& lower, const Tile& upper);
  static MatmulInput mx(const Tile& data, const Tile& scale);
};

// How one copy becomes DMA descriptors (pieces by partitions) and which
// engines they go to. The builder's policy (every field 0) splits a copy by
// partitions over every engine in pieces of at least kMinPieceBytes (2 KiB,
// the DMA guide's efficient minimum), placing a stream's pieces on the
// engines in turn: lowest latency for one copy, and what the calibration
// rows were fitted with. A kernel that has several large copies in flight
// gets more from fewer, larger descriptors (min_piece_bytes =
// kLargePieceBytes, the guide's "ideally 32 KiB or more"; docs/kernel-guide.md,
// "How copies become descriptors") and says so per call
// (KernelBuilder::dma(..., spread)) or for the calls that follow
// (KernelBuilder::set_dma_spread).
struct DmaSpread {
  static constexpr std::uint32_t kMinPieceBytes = 2 * 1024;
  static constexpr std::uint32_t kLargePieceBytes = 32 * 1024;
  std::uint32_t pieces = 0;           // descriptors per copy (at most its partitions); 0: the policy above
  std::uint32_t min_piece_bytes = 0;  // the policy's smallest piece; 0: kMinPieceBytes
  std::uint32_t first_engine = 0;     // the engines the pieces go to, in turn: first_engine ..
  std::uint32_t engines = 0;          //   first_engine + engines - 1; 0: through the last engine
};

// A semaphore of this core that other cores of the chip raise
// (KernelBuilder::core_semaphore); a running count from 0 at the launch.
struct CoreSemaphore {
  std::uint16_t index = 0;
  std::string name;
};

// A broken rule, thrown by the call that broke it.
class KernelError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class KernelBuilder {
public:
  KernelBuilder(const arch::HwConfig& cfg, std::string kernel_name);
  // A kernel for instance `spmd.instance` of an SPMD launch over
  // `spmd.grid` cores: it may reach the other cores (below).
  KernelBuilder(const arch::HwConfig& cfg, std::string kernel_name, const Spmd& spmd);
  ~KernelBuilder();
  KernelBuilder(const KernelBuilder&) = delete;
  KernelBuilder& operator=(const KernelBuilder&) = delete;

  // --- Tiles ---------------------------------------------------------------
  // [partitions, free] of dtype in SBUF; throws when SBUF has no room left.
  Tile sbuf(const std::string& name, std::uint32_t partitions, std::uint32_t free, DType dtype);
  // [partitions, free] in PSUM, inside one bank.
  Tile psum(const std::string& name, std::uint32_t partitions, std::uint32_t free, DType dtype = DType::Fp32);
  // Returns a tile's space; later instructions may reuse it (the builder
  // orders them after the tile's last use).
  void release(const Tile& tile);

  // --- DMA -------------------------------------------------------------------
  // A copy is split by partitions into pieces, each one descriptor on one
  // engine, as DmaSpread says (the builder's setting, or the call's own);
  // consumers wait for every piece.
  void dma(const Tile& dst, const View& src, SourceLocation where = SourceLocation::current());  // HBM -> SBUF
  void dma(const Tile& dst, const View& src, const DmaSpread& spread, SourceLocation where = SourceLocation::current());
  // HBM -> SBUF into rows of a 2-D image held in each partition: the view is
  // [partitions x rows x columns] and row r lands at element r * pitch of
  // dst (an interior inside zero padding, say). The rest of dst is untouched.
  void dma(const Tile& dst, const View& src, std::uint32_t pitch, SourceLocation where = SourceLocation::current());
  void dma(const View& dst, const Tile& src, SourceLocation where = SourceLocation::current());  // SBUF -> HBM
  void dma(const View& dst, const Tile& src, const DmaSpread& spread, SourceLocation where = SourceLocation::current());
  // The spread of every later dma() call that does not give its own
  // (default: DmaSpread{}, the builder's policy). Throws when it names
  // engines the config does not have.
  void set_dma_spread(const DmaSpread& spread);

  // --- Tensor engine ---------------------------------------------------------
  // psum[M, N] (=|+=) stationary[K, M].T @ moving[K, N]. The stationary tile
  // is loaded only when it differs from the one already in the array. The
  // PSUM tile's dtype chooses the accumulation: fp32, or bf16 where
  // tensor.psum_bf16 allows it (one rounding to bf16 per matmul).
  void matmul(const Tile& psum, const Tile& stationary, const Tile& moving, bool accumulate,
              SourceLocation where = SourceLocation::current());
  // The same for inputs in a fast mode (double row, MX; MatmulInput above).
  // Both inputs take the same mode (arch::incompatible's pairing rule); K
  // is the partitions times the rows each holds (1, 2 or 4).
  void matmul(const Tile& psum, const MatmulInput& stationary, const MatmulInput& moving, bool accumulate,
              SourceLocation where = SourceLocation::current());
  // psum[F, P] = src[P, F].T through the array.
  void transpose(const Tile& psum, const Tile& src, SourceLocation where = SourceLocation::current());

  // --- Vector engine -------------------------------------------------------
  void tensor_tensor(const Tile& dst, const Tile& a, const Tile& b, arch::AluOp op, SourceLocation where = SourceLocation::current());
  // tensor_scalar runs on the vector engine, or on the scalar engine
  // (`engine`; same result, at the scalar engine's activation cost) to
  // balance a loop whose vector engine is its bound.
  void tensor_scalar(const Tile& dst, const Tile& a, arch::AluOp op, float s, arch::AluOp op2 = arch::AluOp::Bypass,
                     float s2 = 0, arch::Engine engine = arch::Engine::Vector,
                     SourceLocation where = SourceLocation::current());
  // Per-partition scalars: dst[p, :] = (a[p, :] <op> s[p]) <op2> s2[p], with s
  // and s2 [P, 1] tiles (a row's max, mean or 1/sum); without s2 the second
  // step takes the immediate s2_value.
  void tensor_scalar(const Tile& dst, const Tile& a, arch::AluOp op, const Tile& s,
                     arch::AluOp op2 = arch::AluOp::Bypass, const Tile* s2 = nullptr, float s2_value = 0,
                     arch::Engine engine = arch::Engine::Vector, SourceLocation where = SourceLocation::current());
  // An immediate first scalar and a per-partition second one:
  // dst[p, i] = (a[p, i] <op> s) <op2> s2[p].
  void tensor_scalar(const Tile& dst, const Tile& a, arch::AluOp op, float s, arch::AluOp op2, const Tile& s2,
                     arch::Engine engine = arch::Engine::Vector, SourceLocation where = SourceLocation::current());
  void reduce(const Tile& dst, const Tile& a, arch::AluOp op, SourceLocation where = SourceLocation::current());  // along the free axis: dst [P, 1]
  void copy(const Tile& dst, const Tile& src, arch::Engine engine = arch::Engine::Vector, SourceLocation where = SourceLocation::current());
  void memset(const Tile& dst, float value, SourceLocation where = SourceLocation::current());
  void select(const Tile& dst, const Tile& pred, const Tile& a, const Tile& b, SourceLocation where = SourceLocation::current());

  // --- Scalar engine -------------------------------------------------------
  // dst = f(src * scale + bias); bias_tile [P, 1] if given; accumulate [P, 1]
  // receives each partition's sum of results if given.
  void activation(const Tile& dst, const Tile& src, arch::ActFunc f, float scale = 1.0f, float bias = 0.0f,
                  const Tile* bias_tile = nullptr, const Tile* accumulate = nullptr, SourceLocation where = SourceLocation::current());

  // --- GpSimd engine ---------------------------------------------------------
  void iota(const Tile& dst, float base, float partition_step, float free_step, SourceLocation where = SourceLocation::current());
  void partition_reduce(const Tile& dst, const Tile& src, arch::AluOp op, SourceLocation where = SourceLocation::current());  // dst [1, F]

  // --- Other cores of the chip (docs/multicore.md, "Between cores") --------
  // Every instance of an SPMD launch makes the same calls in the same order
  // (allocating alike, so a tile names the same SBUF bytes on every core,
  // and a semaphore's name has the same index on every core).
  //
  // A semaphore of this core that other cores raise and this core waits on.
  CoreSemaphore core_semaphore(const std::string& name);
  // This core's SBUF tile `src` into the bytes tile `dst` names on core
  // `core`, split by partitions over the DMA engines that reach other cores
  // (chip.peer_dma_engines). Once every piece has landed there, the GpSimd
  // engine raises `done` on that core by 1. It waits for what wrote `src`
  // and for any wait_core() that guards `dst` on `core`.
  void dma_to_core(int core, const Tile& dst, const Tile& src, const CoreSemaphore& done,
                   SourceLocation where = SourceLocation::current());
  // Raises `sem` on core `core` by 1 from `engine` once every operation
  // placed so far that reads or writes `after` (a tile of this core) has
  // finished: its bytes may be overwritten now (a receive buffer is free).
  void signal_core(int core, const CoreSemaphore& sem, const Tile& after,
                   arch::Engine engine = arch::Engine::GpSimd, SourceLocation where = SourceLocation::current());
  // Waits on `engine` until this core's `sem` has been raised `count` times
  // in all, and orders every later operation on `tile` after the wait: of
  // this core (core -1: what other cores sent into it has landed), or the
  // tile as core `core` holds it (later dma_to_core() copies into it wait:
  // that core said it is free).
  void wait_core(const CoreSemaphore& sem, std::uint32_t count, const Tile& tile, int core = -1,
                 arch::Engine engine = arch::Engine::GpSimd, SourceLocation where = SourceLocation::current());
  // The instance this kernel is built for (grid 1: a kernel of one core).
  const Spmd& spmd() const;

  // --- Profiles ---------------------------------------------------------------
  // Labels the instructions and DMAs that follow (until the next label) in
  // traces: a source line, a loop position ("k=3 of 8"), a phase. Empty
  // clears it. Labels change nothing the core runs. Each instruction and
  // DMA also carries its call site (SourceLocation).
  void label(const std::string& text);
  // label(), for a phase of a collective between the cores (a
  // reduce-scatter, an all-gather): a chip run's report gives each such
  // phase's wall time and their share of the run (RunReport::collectives).
  void collective_label(const std::string& text);

  // Ends every stream and returns the program; the builder is spent.
  Program build();

  const arch::HwConfig& config() const { return cfg_; }

private:
  struct Impl;
  const arch::HwConfig& cfg_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
