// Drives a Verilated tensor engine from a C++ cycle loop: queues instructions
// and operand beats on its ready/valid ports, models PSUM behind the write port
// with the reference adder (or hands every write to a sink), and records the
// edge of every handshake so that tests can check results bit for bit and
// timing cycle for cycle. The RTL tests and the rtl / sampled fidelities of
// the core (rtl_tensor_datapath.cpp) share it.
//
// Model is one of the Vtensor_engine_<R>x<C> classes; they share port names
// and the stationary port's width, kLoadColumns columns (the build's
// TESSERA_TE_LOAD_COLUMNS, rtl/tensor_engine/array_sizes.cmake).
// TESSERA_WAVES=1 writes an FST of the run, <wave_name>.fst, into
// TESSERA_WAVES_DIR (default: the working directory); trace_to() writes one
// on the caller's time axis (tessera run --waves, cosim/waves.h).
#pragma once

#include "arch/numerics.h"

#include <verilated.h>
#include <verilated_fst_c.h>

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#ifndef TESSERA_TE_LOAD_COLUMNS
#error "TESSERA_TE_LOAD_COLUMNS comes with the tensor_engine_<size> libraries (rtl/tensor_engine/CMakeLists.txt)"
#endif

namespace tessera::cosim {

// The widest stationary beat of every Verilated tensor engine, in columns.
inline constexpr int kLoadColumns = TESSERA_TE_LOAD_COLUMNS;

// Helpers over Verilator's port types: packed ports up to 64 bits are plain
// integers, wider ones are VlWide arrays of 32-bit words.
template <class T>
void set_field(T& port, int lsb, int width, std::uint32_t value) {
  if constexpr (std::is_integral_v<T>) {
    const T mask = static_cast<T>(((std::uint64_t{1} << width) - 1) << lsb);
    port = static_cast<T>((port & ~mask) | ((static_cast<T>(value) << lsb) & mask));
  } else {
    // Fields never straddle 32-bit words (widths 16 and 32, aligned).
    const std::uint32_t word_mask = width == 32 ? 0xFFFFFFFFu : ((1u << width) - 1) << (lsb % 32);
    auto& w = port[lsb / 32];
    w = (w & ~word_mask) | ((value << (lsb % 32)) & word_mask);
  }
}

template <class T>
std::uint32_t get_field(const T& port, int lsb, int width) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(port) >> lsb) &
                                      ((std::uint64_t{1} << width) - 1));
  } else {
    const std::uint32_t w = port[lsb / 32] >> (lsb % 32);
    return width == 32 ? w : w & ((1u << width) - 1);
  }
}

enum class Op { LoadStationary = 0, MultiplyMoving = 1 };

struct Command {
  Op op = Op::LoadStationary;
  int k = 0, m = 0, n = 0;
  bool acc = false;
  int addr = 0;
};

// Randomness injected into the ports (all off = an ideal environment).
struct PortNoise {
  double psum_ready = 1.0;   // probability that ps_ready_i is high in a cycle
  double operand_valid = 1.0;  // probability that a queued operand beat is offered
  double command_valid = 1.0;  // probability that a queued command is offered
};

// One beat on the PSUM write port: dst[:, addr] for the partitions in mask.
struct PsumWrite {
  int addr = 0;
  bool acc = false;
  std::uint64_t cycle = 0;             // cycle() of the step that sampled it
  std::vector<std::uint32_t> values;   // one per column of the array
  std::vector<bool> mask;
};

template <class Model>
class EngineDriver {
 public:
  EngineDriver(int rows, int cols, std::string wave_name = {})
      : rows_(rows), cols_(cols), ctx_(std::make_unique<VerilatedContext>()) {
    ctx_->randReset(0);
    model_ = std::make_unique<Model>(ctx_.get(), "te");
    const char* waves = std::getenv("TESSERA_WAVES");
    if (waves && std::string(waves) == "1") open_waves(wave_name);
    psum_.assign(static_cast<std::size_t>(cols_) * kPsumDepth, 0);
    model_->cfg_min_ii_i = 1;
    model_->cfg_ld_cols_i = 1;
    reset();
  }
  ~EngineDriver() {
    // Verilator 5.006 unregisters a model's scopes through the thread's
    // current context, not the model's own; with other Verilated models in
    // the process (the DMA engines) that may be another one, and the
    // destructor then deadlocks or touches freed memory. Point it at ours.
    Verilated::threadContextp(ctx_.get());
    if (fst_) fst_->close();
    model_->final();
    model_.reset();
  }

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  Model& model() { return *model_; }
  std::uint64_t cycle() const { return cycle_; }
  void set_noise(PortNoise n, std::uint32_t seed) {
    noise_ = n;
    rng_.seed(seed);
  }
  void set_min_ii(int ii) { model_->cfg_min_ii_i = static_cast<std::uint16_t>(ii); }
  // Stationary columns per beat, 1 .. kLoadColumns; set before queuing loads.
  void set_load_columns(int w) {
    if (w < 1 || w > kLoadColumns)
      throw std::invalid_argument("the tensor engine RTL takes 1 to " + std::to_string(kLoadColumns) +
                                  " stationary columns per cycle, not " + std::to_string(w));
    load_cols_ = w;
    model_->cfg_ld_cols_i = static_cast<std::uint16_t>(w);
  }
  int load_columns() const { return load_cols_; }

  // PSUM behind the write port: [cols partitions][kPsumDepth fp32].
  static constexpr int kPsumDepth = 4096;
  std::uint32_t psum(int partition, int addr) const {
    return psum_[static_cast<std::size_t>(partition) * kPsumDepth + addr];
  }
  void set_psum(int partition, int addr, std::uint32_t bits) {
    psum_[static_cast<std::size_t>(partition) * kPsumDepth + addr] = bits;
  }

  // Queues LoadStationary of st[K, M], load_columns() columns per beat
  // (element i * rows + r of a beat is column jW + i, partition r). Rows K..
  // of each beat, and the columns past M of the last, carry `filler`: the
  // engine must never use them.
  void load_stationary(const arch::Bf16Matrix& st, std::uint16_t filler = 0x7F80) {
    commands_.push_back({Op::LoadStationary, static_cast<int>(st.rows), static_cast<int>(st.cols), 0,
                         false, 0});
    const std::size_t w = static_cast<std::size_t>(load_cols_);
    for (std::size_t j = 0; j < st.cols; j += w) {
      std::vector<std::uint16_t> beat(static_cast<std::size_t>(rows_) * kLoadColumns, filler);
      for (std::size_t i = 0; i < w && j + i < st.cols; ++i)
        for (std::size_t r = 0; r < st.rows; ++r) beat[i * rows_ + r] = st.at(r, j + i).bits;
      st_beats_.push_back(std::move(beat));
    }
  }

  // Queues MultiplyMoving of mv[K, N] into PSUM columns addr .. addr + N - 1.
  void multiply_moving(const arch::Bf16Matrix& mv, int addr, bool accumulate,
                       std::uint16_t filler = 0x7FC1) {
    commands_.push_back({Op::MultiplyMoving, static_cast<int>(mv.rows), 0, static_cast<int>(mv.cols),
                         accumulate, addr});
    for (std::size_t j = 0; j < mv.cols; ++j) {
      std::vector<std::uint16_t> beat(rows_, filler);
      for (std::size_t r = 0; r < mv.rows; ++r) beat[r] = mv.at(r, j).bits;
      mv_beats_.push_back(std::move(beat));
    }
  }

  // Queues a bare command (timing tests); operand beats are zeros.
  void command(const Command& c) {
    commands_.push_back(c);
    const bool load = c.op == Op::LoadStationary;
    const int beats = load ? (c.m + load_cols_ - 1) / load_cols_ : c.n;
    auto& q = load ? st_beats_ : mv_beats_;
    for (int j = 0; j < beats; ++j) q.emplace_back(static_cast<std::size_t>(rows_) * (load ? kLoadColumns : 1), 0);
  }

  // When set, PSUM writes go here instead of the modelled PSUM.
  std::function<void(const PsumWrite&)> psum_sink;

  bool queued() const { return !commands_.empty() || !st_beats_.empty() || !mv_beats_.empty(); }

  bool idle() const {
    return commands_.empty() && st_beats_.empty() && mv_beats_.empty() && !model_->busy_o;
  }

  // Runs until everything queued has been executed and written.
  void run_until_idle(std::uint64_t max_cycles = 10'000'000) {
    const std::uint64_t limit = cycle_ + max_cycles;
    while (!idle()) {
      if (cycle_ >= limit) throw std::runtime_error("tensor engine did not go idle");
      step();
    }
  }

  // One clock cycle: drive inputs, settle, sample handshakes, rising edge.
  // After half_step() this completes that cycle: inputs are driven again (a
  // command queued since is offered in the same cycle) and the PSUM write
  // already taken is not taken twice.
  void step() {
    const bool resumed = half_;
    sample(!resumed);
    half_ = false;
    edge();
  }

  // The first half of step(): inputs driven and handshakes sampled (the PSUM
  // write of this cycle delivered) without the rising edge, so that a caller
  // who learns only now that it is done with the RTL can still offer a command
  // in this very cycle.
  void half_step() {
    if (half_) return;
    sample(true);
    half_ = true;
  }
  bool mid_cycle() const { return half_; }

  // Edge (cycle count after the rising edge) of every accepted command and of
  // every PSUM write, in order.
  std::vector<std::uint64_t> accept_edges;
  std::vector<std::uint64_t> write_edges;
  std::string wave_path;  // set when a waveform is being written

  // Traces into `path`, each dump stamped stamp(cycle(), rising) on the
  // caller's time axis (falling: inputs driven and settled; rising: after the
  // clock edge) and skipped when the stamp is outside [from, to]. Stamps must
  // not decrease.
  void trace_to(const std::string& path, std::function<std::uint64_t(std::uint64_t, bool)> stamp,
                std::uint64_t from, std::uint64_t to) {
    if (fst_) fst_->close();
    ctx_->traceEverOn(true);
    fst_ = std::make_unique<VerilatedFstC>();
    model_->trace(fst_.get(), 99);
    fst_->open(path.c_str());
    wave_path.clear();  // names a TESSERA_WAVES file (driver time), not this one
    stamp_ = std::move(stamp);
    stamp_from_ = from;
    stamp_to_ = to;
  }
  // The caller skips the stamps [from, to) without clocking (the engine is
  // idle, its signals hold): when the trace's window opens in there, the
  // window starts with the held values.
  void trace_hold(std::uint64_t from, std::uint64_t to) {
    if (!fst_ || !stamp_ || dumped_ || stamp_from_ < from || stamp_from_ >= to || stamp_from_ > stamp_to_) return;
    fst_->dump(stamp_from_);
    dumped_ = true;
    last_stamp_ = stamp_from_;
  }
  // Closes the trace (its file is complete afterwards).
  void close_trace() {
    if (fst_) fst_->close();
    fst_.reset();
  }

 private:
  void sample(bool take_write) {
    Model& m = *model_;
    // A valid once offered stays until accepted (ready/valid rule).
    const bool offer_cmd = !commands_.empty() && (m.cmd_valid_i || coin(noise_.command_valid));
    const bool offer_st = !st_beats_.empty() && (m.st_valid_i || coin(noise_.operand_valid));
    const bool offer_mv = !mv_beats_.empty() && (m.mv_valid_i || coin(noise_.operand_valid));
    m.cmd_valid_i = offer_cmd;
    if (offer_cmd) {
      const Command& c = commands_.front();
      m.cmd_op_i = static_cast<std::uint8_t>(c.op);
      m.cmd_k_i = static_cast<std::uint16_t>(c.k);
      m.cmd_m_i = static_cast<std::uint16_t>(c.m);
      m.cmd_n_i = static_cast<std::uint16_t>(c.n);
      m.cmd_acc_i = c.acc;
      m.cmd_addr_i = static_cast<std::uint16_t>(c.addr);
    }
    m.st_valid_i = offer_st;
    if (offer_st) drive_beat(m.st_data_i, st_beats_.front());
    m.mv_valid_i = offer_mv;
    if (offer_mv) drive_beat(m.mv_data_i, mv_beats_.front());
    if (take_write) m.ps_ready_i = coin(noise_.psum_ready);
    m.clk_i = 0;
    m.eval();
    if (take_write) dump(false);

    cmd_fire_ = m.cmd_valid_i && m.cmd_ready_o;
    st_fire_ = m.st_valid_i && m.st_ready_o;
    mv_fire_ = m.mv_valid_i && m.mv_ready_o;
    ps_fire_ = m.ps_valid_o && m.ps_ready_i;
    if (ps_fire_ && take_write) write_psum();
  }

  void edge() {
    Model& m = *model_;
    ++cycle_;
    ctx_->timeInc(1);
    m.clk_i = 1;
    m.eval();
    dump(true);
    ctx_->timeInc(1);

    if (cmd_fire_) {
      accept_edges.push_back(cycle_);
      commands_.pop_front();
      m.cmd_valid_i = 0;
    }
    if (st_fire_) {
      st_beats_.pop_front();
      m.st_valid_i = 0;
    }
    if (mv_fire_) {
      mv_beats_.pop_front();
      m.mv_valid_i = 0;
    }
    if (ps_fire_) write_edges.push_back(cycle_);
  }

  bool coin(double p) {
    if (p >= 1.0) return true;
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < p;
  }

  template <class Port>
  void drive_beat(Port& port, const std::vector<std::uint16_t>& beat) {
    for (std::size_t i = 0; i < beat.size(); ++i) set_field(port, 16 * static_cast<int>(i), 16, beat[i]);
  }

  void write_psum() {
    Model& m = *model_;
    const int addr = m.ps_addr_o;
    if (psum_sink) {
      PsumWrite w;
      w.addr = addr;
      w.acc = m.ps_acc_o;
      w.cycle = cycle_;
      w.values.resize(cols_);
      w.mask.resize(cols_);
      for (int c = 0; c < cols_; ++c) {
        w.mask[c] = get_field(m.ps_mask_o, c, 1) != 0;
        w.values[c] = get_field(m.ps_data_o, 32 * c, 32);
      }
      psum_sink(w);
      return;
    }
    if (addr >= kPsumDepth) throw std::runtime_error("PSUM write beyond the modelled depth");
    for (int c = 0; c < cols_; ++c) {
      if (!get_field(m.ps_mask_o, c, 1)) continue;
      const std::uint32_t v = get_field(m.ps_data_o, 32 * c, 32);
      std::uint32_t& cell = psum_[static_cast<std::size_t>(c) * kPsumDepth + addr];
      cell = m.ps_acc_o ? arch::fp32_bits(arch::fp32_add(arch::fp32_from_bits(cell),
                                                         arch::fp32_from_bits(v)))
                        : v;
    }
  }

  void reset() {
    Model& m = *model_;
    m.clk_i = 0;
    m.rst_ni = 0;
    m.cmd_valid_i = 0;
    m.st_valid_i = 0;
    m.mv_valid_i = 0;
    m.ps_ready_i = 1;
    m.eval();
    m.clk_i = 1;
    m.eval();
    m.clk_i = 0;
    m.rst_ni = 1;
    m.eval();
  }

  void open_waves(std::string name) {
    if (name.empty()) name = "tensor_engine";
    for (char& ch : name)
      if (ch == '/' || ch == ' ') ch = '_';
    const char* dir = std::getenv("TESSERA_WAVES_DIR");
    const std::string path = (dir ? std::string(dir) + "/" : std::string()) + name + ".fst";
    ctx_->traceEverOn(true);
    fst_ = std::make_unique<VerilatedFstC>();
    model_->trace(fst_.get(), 99);
    fst_->open(path.c_str());
    wave_path = path;
  }

  void dump(bool rising) {
    if (!fst_) return;
    if (!stamp_) return fst_->dump(ctx_->time());
    const std::uint64_t t = stamp_(cycle_, rising);
    if (t < stamp_from_ || t > stamp_to_ || (dumped_ && t <= last_stamp_)) return;
    fst_->dump(t);
    dumped_ = true;
    last_stamp_ = t;
  }

  int rows_, cols_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<VerilatedFstC> fst_;
  std::function<std::uint64_t(std::uint64_t, bool)> stamp_;
  std::uint64_t stamp_from_ = 0, stamp_to_ = 0, last_stamp_ = 0;
  bool dumped_ = false;
  std::deque<Command> commands_;
  std::deque<std::vector<std::uint16_t>> st_beats_;
  std::deque<std::vector<std::uint16_t>> mv_beats_;
  std::vector<std::uint32_t> psum_;
  PortNoise noise_;
  int load_cols_ = 1;
  std::mt19937 rng_{1};
  std::uint64_t cycle_ = 0;
  bool half_ = false;
  bool cmd_fire_ = false, st_fire_ = false, mv_fire_ = false, ps_fire_ = false;
};

}  // namespace tessera::cosim
