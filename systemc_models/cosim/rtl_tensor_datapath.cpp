// The Verilated models come before any SystemC header: verilated.h switches
// to SystemC time when it sees SystemC, and these models run on their own
// VerilatedContext time, clocked by the engine driver, not by the kernel.
#include "cosim/engine_driver.h"
#include "cosim/te_models.h"  // generated: the Verilated models of array_sizes.cmake

#include "cosim/rtl_tensor_datapath.h"

#include "arch/tensor_timing.h"
#include "cosim/waves.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

namespace tessera::cosim {
namespace {

// A command that stops the RTL from accepting or finishing for this long is
// a hang, not a stall: nothing in the engine waits on anything but itself.
constexpr std::int64_t kStallLimit = 10'000'000;

// Cycle numbering: the fast model counts tensor-clock cycles from the core's
// reset and an instruction offered at cycle c and accepted at once has
// `accepted` = c. The driver counts rising edges; a handshake sampled in the
// step that starts at driver cycle d happens at cycle d + offset_. offset_
// grows only when the engine is idle and the datapath jumps over cycles in
// which nothing could happen (e.g. the engine waiting on a semaphore for DMA),
// which saves evaluating the model for them.
template <class Model>
class RtlDatapath final : public RtlTensorDatapath {
public:
  RtlDatapath(const arch::TensorTimingParams& timing, const std::string& wave_name,
              const std::optional<trace::WaveProbe::RtlTrace>& trace, double period_ps)
      : driver_(static_cast<int>(timing.rows), static_cast<int>(timing.cols), wave_name), timing_(timing) {
    driver_.set_min_ii(static_cast<int>(timing.min_initiation_interval));
    driver_.set_load_columns(static_cast<int>(timing.stationary_columns_per_cycle));
    driver_.psum_sink = [this](const PsumWrite& w) { take_write(w); };
    if (trace) {
      // Driver cycle d is core cycle d + offset_; its inputs settle at the
      // start of the cycle and the clock rises half a period later.
      period_ps_ = period_ps;
      driver_.trace_to(
          trace->path,
          [this](std::uint64_t d, bool rising) {
            return cycle_ps(static_cast<double>(static_cast<std::int64_t>(d) + offset_) - (rising ? 0.5 : 0.0));
          },
          trace->from_ps, trace->to_ps);
    }
  }

  engines::TensorTiming issue(engines::TensorCommand& cmd, std::uint64_t earliest) override {
    advance_to(static_cast<std::int64_t>(earliest));
    const bool load = cmd.op == engines::TensorCommand::Op::LoadStationary;
    const int k = static_cast<int>(cmd.data.rows);
    const int width = static_cast<int>(cmd.data.cols);  // M for a load, N for a multiply
    if (k < 1 || k > driver_.rows())
      throw std::runtime_error(fmt::format("the tensor engine RTL takes K from 1 to {}, not {}", driver_.rows(), k));
    if (width < 1 || (load && width > driver_.cols()))
      throw std::runtime_error(fmt::format("the tensor engine RTL cannot take a {} of {} columns",
                                           load ? "LoadStationary" : "MultiplyMoving", width));
    const bool has_data = !cmd.data.data.empty();
    const bool acc = cmd.mode == arch::PsumMode::Accumulate;
    records_.push_back({load, 0, 0});
    if (load) {
      if (has_data) driver_.load_stationary(cmd.data);
      else driver_.command({Op::LoadStationary, k, width, 0, false, 0});
      stationary_m_ = width;
    } else {
      if (stationary_m_ == 0) throw std::runtime_error("MultiplyMoving before any LoadStationary");
      // Every multiply writes from PSUM index 0: the core's PSUM addresses are
      // access patterns the engine applies on delivery, and the engine's
      // controller has no address-dependent rule that would make them matter.
      if (has_data) driver_.multiply_moving(cmd.data, 0, acc);
      else driver_.command({Op::MultiplyMoving, k, 0, width, acc, 0});
      Pending p;
      p.record = records_.size() - 1;
      p.m = stationary_m_;
      p.n = width;
      p.acc = acc;
      p.left = width;
      p.write_psum = std::move(cmd.write_psum);
      if (p.write_psum) p.out = arch::Fp32Matrix(static_cast<std::size_t>(p.m), static_cast<std::size_t>(width));
      pending_.push_back(std::move(p));
    }
    const std::size_t before = driver_.accept_edges.size();
    for (std::int64_t guard = 0; driver_.accept_edges.size() == before; ++guard) {
      if (guard > kStallLimit) throw std::runtime_error("the tensor engine RTL stopped accepting commands");
      step();
    }
    const std::int64_t accepted = static_cast<std::int64_t>(driver_.accept_edges.back()) - 1 + offset_;
    // The driver's logs would grow with the run; the records keep what matters.
    driver_.accept_edges.clear();
    driver_.write_edges.clear();
    last_accept_ = accepted;
    RtlCommandRecord& r = records_.back();
    r.accepted = static_cast<std::uint64_t>(accepted);
    if (load) {
      // The RTL signals nothing when weights are in; its rule is ceil(M / W) beats from acceptance.
      r.completed = r.accepted + static_cast<std::uint64_t>(arch::stationary_beats(timing_, width));
      done_ = std::max(done_, r.completed);
      complete(records_.size() - 1);
    } else {
      last_mm_accept_ = accepted;
    }
    return {r.accepted, load ? r.completed : r.accepted};
  }

  std::uint64_t flush() override {
    // Runs only until the last PSUM write: weights still streaming in after
    // it produce nothing and are finished by the next issue(), so the RTL is
    // never run past a cycle in which the engine may offer its next command.
    // The last cycle is sampled but not clocked (half_step): the next command
    // may be offered in the very cycle of the last PSUM write, as with the
    // fast model, and is then accepted in that cycle.
    for (std::int64_t guard = 0; !pending_.empty(); ++guard) {
      if (guard > kStallLimit) throw std::runtime_error("the tensor engine RTL stopped writing results");
      driver_.half_step();
      if (pending_.empty()) break;
      step();
    }
    return done_;
  }

  std::uint64_t busy_cycles() const override { return static_cast<std::uint64_t>(busy_.cycles()); }

  std::string name() const override { return fmt::format("rtl {}x{}", driver_.rows(), driver_.cols()); }

  void add_stats(trace::Group& engine) override { stats_ = std::make_unique<Stats>(engine, *this); }

  const std::vector<RtlCommandRecord>& records() const override { return records_; }
  std::uint64_t cycles_evaluated() const override { return evaluated_; }
  std::uint64_t cycles_skipped() const override { return skipped_; }
  void run_idle(std::uint64_t cycles) override {
    for (std::uint64_t i = 0; i < cycles; ++i) step();
  }
  std::string wave_window(std::uint64_t from, std::uint64_t to) const override {
    if (driver_.wave_path.empty()) return {};
    // The driver advances its trace time by 2 per cycle (both clock edges).
    const auto time = [this](std::uint64_t c) { return 2 * (static_cast<std::int64_t>(c) - offset_); };
    return fmt::format("{}, time {} to {}", driver_.wave_path, time(from), time(to) + 2);
  }

private:
  struct Pending {
    std::size_t record = 0;
    int m = 0, n = 0, left = 0;
    bool acc = false;
    std::function<void(const arch::Fp32Matrix&)> write_psum;
    arch::Fp32Matrix out;
  };

  std::int64_t now() const { return static_cast<std::int64_t>(driver_.cycle()) + offset_; }

  // Marks record i complete and adds to the busy cycles every record, in
  // issue order, up to the first whose completion is still to come.
  void complete(std::size_t i) {
    if (done_records_.size() < records_.size()) done_records_.resize(records_.size(), false);
    done_records_[i] = true;
    while (busy_next_ < records_.size() && done_records_[busy_next_]) {
      const RtlCommandRecord& r = records_[busy_next_++];
      busy_.add(static_cast<std::int64_t>(r.accepted), static_cast<std::int64_t>(r.completed));
    }
  }
  std::uint64_t cycle_ps(double cycle) const { return static_cast<std::uint64_t>(std::llround(cycle * period_ps_)); }

  void step() {
    driver_.step();
    ++evaluated_;
  }

  void advance_to(std::int64_t earliest) {
    if (driver_.mid_cycle()) {
      if (earliest == now()) return;  // offered in the cycle flush() left open
      if (earliest > now()) step();
    }
    // Commands go in order, so one offered "earlier" than the cycle after the
    // previous acceptance (a Transpose issues its two back to back) is offered
    // then, as in the fast model. Any other offer in the RTL's past would
    // mean it had been run too far.
    if (earliest < now()) {
      if (driver_.mid_cycle() || now() != last_accept_ + 1)
        throw std::logic_error(fmt::format("tensor command offered at cycle {}, but the RTL is already at cycle {}",
                                           earliest, now()));
      earliest = now();
    }
    while (now() < earliest) {
      if (driver_.idle() && now() >= last_mm_accept_ + timing_.min_initiation_interval) {
        const std::int64_t gap = earliest - now();
        if (period_ps_ > 0)
          driver_.trace_hold(cycle_ps(static_cast<double>(now())), cycle_ps(static_cast<double>(earliest)));
        skipped_ += static_cast<std::uint64_t>(gap);
        offset_ += gap;
        return;
      }
      step();
    }
  }

  void take_write(const PsumWrite& w) {
    if (pending_.empty()) throw std::runtime_error("the tensor engine RTL wrote PSUM with no multiply in flight");
    Pending& p = pending_.front();
    if (w.addr < 0 || w.addr >= p.n)
      throw std::runtime_error(fmt::format("the tensor engine RTL wrote PSUM index {} for a multiply of {} columns",
                                           w.addr, p.n));
    if (w.acc != p.acc)
      throw std::runtime_error(fmt::format("the tensor engine RTL wrote PSUM with accumulate {} for a multiply with "
                                           "accumulate {}", w.acc, p.acc));
    for (int c = 0; c < driver_.cols(); ++c) {
      if (w.mask[c] != (c < p.m))
        throw std::runtime_error(fmt::format("the tensor engine RTL's PSUM write mask has partition {} {} for M = {}",
                                             c, w.mask[c] ? "on" : "off", p.m));
    }
    if (p.write_psum) {
      for (int c = 0; c < p.m; ++c)
        p.out.at(static_cast<std::size_t>(c), static_cast<std::size_t>(w.addr)) = arch::fp32_from_bits(w.values[c]);
    }
    if (--p.left > 0) return;
    const std::uint64_t completed = static_cast<std::uint64_t>(static_cast<std::int64_t>(w.cycle) + offset_);
    records_[p.record].completed = completed;
    done_ = std::max(done_, completed);
    complete(p.record);
    auto write_psum = std::move(p.write_psum);
    arch::Fp32Matrix out = std::move(p.out);
    pending_.pop_front();
    if (write_psum) write_psum(out);
  }

  EngineDriver<Model> driver_;
  double period_ps_ = 0;  // tensor clock period when tracing on the run's time axis
  arch::TensorTimingParams timing_;
  std::int64_t offset_ = 0;
  std::int64_t last_mm_accept_ = -(std::int64_t{1} << 40);
  std::int64_t last_accept_ = -(std::int64_t{1} << 40);
  int stationary_m_ = 0;
  std::deque<Pending> pending_;
  std::vector<RtlCommandRecord> records_;
  std::vector<bool> done_records_;
  std::size_t busy_next_ = 0;
  arch::BusyCycles busy_;
  std::uint64_t done_ = 0;
  std::uint64_t evaluated_ = 0, skipped_ = 0;
  struct Stats : trace::Group {
    Stats(trace::Group& engine, const RtlDatapath& d)
        : Group(engine, "datapath"),
          evaluated(*this, "rtl_cycles_evaluated", "cycles", "tensor-engine RTL clock cycles evaluated",
                    [&d] { return static_cast<double>(d.evaluated_); }),
          skipped(*this, "rtl_cycles_skipped", "cycles",
                  "idle tensor-engine cycles jumped over without evaluating the RTL",
                  [&d] { return static_cast<double>(d.skipped_); }) {}
    trace::Formula evaluated, skipped;
  };
  std::unique_ptr<Stats> stats_;
};

class SampledDatapath final : public engines::TensorDatapath {
public:
  SampledDatapath(std::unique_ptr<engines::TensorDatapath> fast, std::unique_ptr<RtlTensorDatapath> rtl,
                  const arch::TensorTimingParams& timing, SamplingPolicy policy, SampledFailure on_failure)
      : fast_(std::move(fast)), rtl_(std::move(rtl)), params_(timing), policy_(policy),
        failure_(std::move(on_failure)),
        start_(std::chrono::steady_clock::now()) {}

  engines::TensorTiming issue(engines::TensorCommand& cmd, std::uint64_t earliest) override {
    if (cmd.op == engines::TensorCommand::Op::LoadStationary) {
      stationary_ = cmd.data;
      return fast_->issue(cmd, earliest);
    }
    if (!take_sample(cmd)) {
      ++unsampled_;
      return fast_->issue(cmd, earliest);
    }
    // The fast model's output, seen on its way to PSUM.
    auto seen = std::make_shared<std::optional<arch::Fp32Matrix>>();
    auto write_psum = cmd.write_psum;
    if (write_psum)
      cmd.write_psum = [seen, write_psum](const arch::Fp32Matrix& out) {
        *seen = out;
        write_psum(out);
      };
    const engines::TensorTiming t = fast_->issue(cmd, earliest);
    cmd.write_psum = write_psum;
    if (write_psum && !*seen) throw std::logic_error("the sampled datapath needs a fast model that delivers at issue");
    check(cmd, seen->has_value() ? &**seen : nullptr, earliest);
    return t;
  }

  std::uint64_t flush() override { return fast_->flush(); }
  std::uint64_t busy_cycles() const override { return fast_->busy_cycles(); }
  std::string name() const override { return "sampled (" + fast_->name() + " checked by " + rtl_->name() + ")"; }

  void add_stats(trace::Group& engine) override { stats_ = std::make_unique<Stats>(engine, *this); }

private:
  bool take_sample(const engines::TensorCommand& cmd) {
    const auto key = std::make_tuple(cmd.data.rows, stationary_.cols, cmd.data.cols,
                                     cmd.mode == arch::PsumMode::Accumulate);
    if (shapes_seen_.insert(key).second) {
      ++shapes_;
      since_sample_ = 0;
      return true;
    }
    if (policy_.sample_every < 1 || ++since_sample_ < policy_.sample_every) return false;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (rtl_seconds_ >= policy_.rtl_budget_percent / 100.0 * elapsed) return false;
    since_sample_ = 0;
    return true;
  }

  // The sampled instruction alone on the RTL, after its weights: its result
  // bits and its isolated timing, against the fast model's bits and the
  // timing rules.
  void check(const engines::TensorCommand& cmd, const arch::Fp32Matrix* fast_out, std::uint64_t earliest) {
    const auto wall = std::chrono::steady_clock::now();
    ++sampled_;
    ++checks_;
    std::optional<arch::Fp32Matrix> faulty;
    if (fast_out && checks_ == failure_.inject_fault_at_sample && !fast_out->data.empty()) {
      faulty = *fast_out;
      faulty->data[0] = arch::fp32_from_bits(arch::fp32_bits(faulty->data[0]) ^ 1u);
      fast_out = &*faulty;
    }
    const auto m = static_cast<std::int64_t>(stationary_.cols);
    const auto n = static_cast<std::int64_t>(cmd.data.cols);
    const bool acc = cmd.mode == arch::PsumMode::Accumulate;
    // Far enough past everything before that the RTL is idle: isolated
    // timing. No earlier than the instruction's own issue, so that in a
    // waveform the sample sits where the instruction ran.
    const std::uint64_t start =
        std::max(earliest, rtl_->flush() + static_cast<std::uint64_t>(params_.rows + params_.cols +
                                                                      params_.min_initiation_interval + 2));
    engines::TensorCommand load{engines::TensorCommand::Op::LoadStationary, stationary_, arch::PsumMode::Overwrite, {}};
    std::optional<arch::Fp32Matrix> rtl_out;
    engines::TensorCommand mul{engines::TensorCommand::Op::MultiplyMoving, cmd.data, cmd.mode, {}};
    if (fast_out) mul.write_psum = [&rtl_out](const arch::Fp32Matrix& out) { rtl_out = out; };
    const auto t_load = rtl_->issue(load, start);
    const auto t_mul = rtl_->issue(mul, start);
    const std::uint64_t rtl_done = rtl_->flush();

    arch::TensorScheduler formula(params_);
    const auto f_load = formula.issue({arch::TensorOp::LoadStationary, m, 0}, 0);
    const auto f_mul = formula.issue({arch::TensorOp::MultiplyMoving, 0, n}, 0);
    const std::int64_t rtl_accept = static_cast<std::int64_t>(t_mul.accepted - t_load.accepted);
    const std::int64_t rtl_complete = static_cast<std::int64_t>(rtl_done - t_load.accepted);
    const std::int64_t f_accept = f_mul.accept - f_load.accept;
    const std::int64_t f_complete = f_mul.done - f_load.accept;
    rtl_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();

    const std::string shape = fmt::format("MultiplyMoving K={} M={} N={}{}", cmd.data.rows, m, n,
                                          acc ? " accumulate" : "");
    const std::string window = rtl_->wave_window(t_load.accepted, rtl_done);
    std::string waves = window.empty() ? "" : " (waveform: " + window + ")";
    const auto replay = [&] {
      if (failure_.waves_dir.empty()) return;
      try {
        waves += "; waveform of the failing instruction: " + waves_open_command(replay_waves(cmd, start));
      } catch (const std::exception& e) {
        waves += fmt::format("; no waveform of it: {}", e.what());
      }
    };
    if (rtl_accept != f_accept || rtl_complete != f_complete) replay();
    if (rtl_accept != f_accept || rtl_complete != f_complete)
      throw std::runtime_error(fmt::format(
          "sampled check failed for {}: after its LoadStationary the RTL accepts it in {} and completes it in {} "
          "cycles, the fast model's timing says {} and {}{}",
          shape, rtl_accept, rtl_complete, f_accept, f_complete, waves));
    if (!fast_out) return;
    if (!rtl_out) throw std::runtime_error(fmt::format("sampled check failed for {}: the RTL wrote no result", shape));
    std::size_t differ = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < fast_out->data.size(); ++i) {
      if (arch::fp32_bits(fast_out->data[i]) == arch::fp32_bits(rtl_out->data[i])) continue;
      if (differ++ == 0) first = i;
    }
    if (differ == 0) return;
    replay();
    const std::size_t cols = fast_out->cols;
    throw std::runtime_error(fmt::format(
        "sampled check failed for {}: {} of {} result values differ; first at [m {}, n {}]: RTL 0x{:08x} ({}), "
        "fast model 0x{:08x} ({}){}",
        shape, differ, fast_out->data.size(), first / cols, first % cols, arch::fp32_bits(rtl_out->data[first]),
        rtl_out->data[first], arch::fp32_bits(fast_out->data[first]), fast_out->data[first], waves));
  }

  // Runs the sampled instruction again, after its weights, from cycle
  // `start` on a fresh RTL that traces it; returns the waveform's path.
  std::string replay_waves(const engines::TensorCommand& cmd, std::uint64_t start) {
    namespace fs = std::filesystem;
    fs::create_directories(failure_.waves_dir);
    const std::string base = (fs::path(failure_.waves_dir) / fmt::format("sampled-failure-{}", checks_)).string();
    const std::string part = base + ".rtl.fst";
    std::uint64_t done = 0;
    {
      auto rtl = make_rtl_tensor_datapath(params_, "replay", trace::WaveProbe::RtlTrace{part, 0, UINT64_MAX},
                                          failure_.tensor_period_ps);
      engines::TensorCommand load{engines::TensorCommand::Op::LoadStationary, stationary_, arch::PsumMode::Overwrite,
                                  {}};
      engines::TensorCommand mul{engines::TensorCommand::Op::MultiplyMoving, cmd.data, cmd.mode, {}};
      rtl->issue(load, start);
      rtl->issue(mul, start);
      done = rtl->flush();
      rtl->run_idle(kReplayTail);
    }
    const auto ps = [this](std::uint64_t c) {
      return static_cast<std::uint64_t>(std::llround(static_cast<double>(c) * failure_.tensor_period_ps));
    };
    const WaveWindow window{ps(start), ps(done + kReplayTail)};
    const auto signals = merge_waves({{part, "rtl.tensor", -1, true}}, base + ".fst", window);
    write_gtkw(base + ".fst", base + ".gtkw", signals, {}, window);
    fs::remove(part);
    return base + ".fst";
  }

  // Cycles shown after the last PSUM write: the write port going idle.
  static constexpr std::uint64_t kReplayTail = 3;

  std::unique_ptr<engines::TensorDatapath> fast_;
  std::unique_ptr<RtlTensorDatapath> rtl_;
  std::int64_t checks_ = 0;
  arch::TensorTimingParams params_;
  SamplingPolicy policy_;
  SampledFailure failure_;
  std::chrono::steady_clock::time_point start_;
  arch::Bf16Matrix stationary_;
  std::set<std::tuple<std::size_t, std::size_t, std::size_t, bool>> shapes_seen_;
  std::int64_t since_sample_ = 0;
  double sampled_ = 0, shapes_ = 0, unsampled_ = 0, rtl_seconds_ = 0;
  struct Stats : trace::Group {
    Stats(trace::Group& engine, const SampledDatapath& d)
        : Group(engine, "datapath"),
          sampled(*this, "sampled_instructions", "count", "MultiplyMoving instructions re-executed on the RTL and compared",
                  [&d] { return d.sampled_; }),
          shapes(*this, "sampled_shapes", "count", "distinct (K, M, N, accumulate) shapes, each sampled at least once",
                 [&d] { return d.shapes_; }),
          unsampled(*this, "unsampled_instructions", "count", "MultiplyMoving instructions run on the fast model only",
                    [&d] { return d.unsampled_; }),
          rtl_seconds(*this, "sample_rtl_seconds", "s", "wall time spent re-executing samples on the RTL",
                      [&d] { return d.rtl_seconds_; }) {}
    trace::Formula sampled, shapes, unsampled, rtl_seconds;
  };
  std::unique_ptr<Stats> stats_;
};

}  // namespace

std::vector<std::string> rtl_tensor_sizes() {
  std::vector<std::string> sizes;
#define TESSERA_TE_MODEL(R, C, MODEL) sizes.push_back(#R "x" #C);
  TESSERA_TE_MODELS
#undef TESSERA_TE_MODEL
  return sizes;
}

std::unique_ptr<RtlTensorDatapath> make_rtl_tensor_datapath(const arch::TensorTimingParams& timing,
                                                            const std::string& wave_name,
                                                            const std::optional<trace::WaveProbe::RtlTrace>& trace,
                                                            double period_ps) {
  const std::int64_t rows = timing.rows, cols = timing.cols;
  if (timing.stationary_columns_per_cycle < 1 || timing.stationary_columns_per_cycle > kLoadColumns)
    throw std::runtime_error(fmt::format(
        "the tensor engine RTL loads 1 to {} stationary columns per cycle, not {} "
        "(config tensor.stationary_columns_per_cycle; TESSERA_TENSOR_LOAD_COLUMNS in "
        "rtl/tensor_engine/array_sizes.cmake sets the widest build); or run with --fidelity tlm",
        kLoadColumns, timing.stationary_columns_per_cycle));
#define TESSERA_TE_MODEL(R, C, MODEL)                                                                   \
  if (rows == (R) && cols == (C))                                                                       \
    return std::make_unique<RtlDatapath<MODEL>>(timing, wave_name, trace, period_ps);
  TESSERA_TE_MODELS
#undef TESSERA_TE_MODEL
  std::string built;
  for (const std::string& s : rtl_tensor_sizes()) built += (built.empty() ? "" : ", ") + s;
  throw std::runtime_error(fmt::format(
      "no Verilated tensor engine of {}x{} in this build (built: {}); add \"{}x{}\" to "
      "rtl/tensor_engine/array_sizes.cmake and rebuild, or run with --fidelity tlm",
      rows, cols, built, rows, cols));
}

std::unique_ptr<engines::TensorDatapath> make_sampled_tensor_datapath(std::unique_ptr<engines::TensorDatapath> fast,
                                                                      std::unique_ptr<RtlTensorDatapath> rtl,
                                                                      const arch::TensorTimingParams& timing,
                                                                      SamplingPolicy policy, SampledFailure on_failure) {
  return std::make_unique<SampledDatapath>(std::move(fast), std::move(rtl), timing, policy, std::move(on_failure));
}

core::TensorDatapathFactory rtl_tensor_factory(trace::WaveProbe* waves, const std::string& failure_waves_dir) {
  return [waves, failure_waves_dir](const arch::HwConfig& cfg,
                                    arch::Fidelity fidelity) -> std::unique_ptr<engines::TensorDatapath> {
    const arch::TensorTimingParams timing = arch::tensor_timing_params(cfg.tensor);
    const double period_ps = 1000.0 / cfg.tensor.clock_ghz;
    const auto trace = [&]() -> std::optional<trace::WaveProbe::RtlTrace> {
      if (!waves) return std::nullopt;
      return waves->rtl_trace("tensor");
    };
    switch (fidelity) {
      case arch::Fidelity::Tlm: return engines::make_fast_tensor_datapath(timing);
      case arch::Fidelity::Rtl: return make_rtl_tensor_datapath(timing, "core_tensor", trace(), period_ps);
      case arch::Fidelity::Sampled: {
        SampledFailure on_failure;
        on_failure.waves_dir = failure_waves_dir;
        on_failure.tensor_period_ps = period_ps;
        if (const char* fault = std::getenv("TESSERA_INJECT_SAMPLED_FAULT"))
          on_failure.inject_fault_at_sample = std::atoll(fault);
        return make_sampled_tensor_datapath(engines::make_fast_tensor_datapath(timing),
                                            make_rtl_tensor_datapath(timing, "core_tensor_sampled", trace(), period_ps),
                                            timing, {cfg.simulation.sample_every, cfg.simulation.sample_rtl_budget_percent},
                                            on_failure);
      }
    }
    throw std::logic_error("unknown fidelity");
  };
}

}  // namespace tessera::cosim
