#include "core/engine.h"

#include "core/semaphores.h"
#include "memory/hbm.h"
#include "trace/sim_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace tessera::core {

using sc_core::sc_time;

void CoreContext::fail(const std::string& message) {
  if (!error) error = message;
  // sc_stop reports "Simulation stopped by user" as an info on stdout, where
  // it would break `tessera run --json` for the runner that reads it.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  sc_core::sc_stop();
}

Engine::EngineStats::EngineStats(trace::Stats& stats, const sc_core::sc_object& owner)
    : Group(stats, owner),
      instructions(*this, "instructions", "count", "instructions executed"),
      busy_ns(*this, "busy_ns", "ns", "time executing compute instructions"),
      semaphore_wait_ns(*this, "semaphore_wait_ns", "ns", "time stalled waiting on a semaphore"),
      fetch_wait_ns(*this, "fetch_wait_ns", "ns", "time stalled waiting for an instruction fetch"),
      memory_stall_ns(*this, "memory_stall_ns", "ns", "part of busy time spent on SBUF/PSUM access beyond the compute") {}

Engine::Engine(sc_core::sc_module_name name, arch::Engine kind, double clock_ghz, CoreContext& ctx,
               const std::vector<std::string>& lanes)
    : sc_module(name),
      fetch("fetch"),
      ctx_(ctx),
      kind_(kind),
      period_(1.0 / clock_ghz, sc_core::SC_NS),
      stats_(ctx.stats, *this) {
  SC_THREAD(run);
  if (ctx.timeline) {
    // Stalls on a track of their own: a pipelined engine's busy slices run
    // ahead of the instruction it is issuing, and so may overlap its waits.
    track_ = ctx.timeline->track("engines", to_string(kind));
    lane_tracks_.push_back(track_);
    for (const auto& lane : lanes)
      lane_tracks_.push_back(ctx.timeline->track("engines", std::string(to_string(kind)) + " " + lane));
    stall_track_ = ctx.timeline->track("engines", std::string(to_string(kind)) + " stalls");
  }
}

void Engine::set_program(std::uint64_t address, std::uint64_t bytes) {
  program_address_ = address;
  program_bytes_ = bytes;
  // At most one record per header's worth of bytes: reserved once, so that
  // a long stream's records are not copied (and faulted in) at each doubling.
  costs_.reserve(bytes / arch::kInstrHeaderBytes);
  block_time_.clear();
  fetch_port_free_ = sc_core::SC_ZERO_TIME;
}

sc_time Engine::cycles(double n) const { return period_ * std::ceil(n); }

sc_time Engine::cycles(double n, double memory_stall) {
  stats_.memory_stall_ns += trace::ns(period_ * memory_stall);
  return cycles(n);
}

void Engine::count_busy(const sc_time& t) {
  const double ns = trace::ns(t);
  stats_.busy_ns += ns;
  if (current_index_ < costs_.size()) costs_[current_index_].busy_ns += ns;
}

void Engine::add_busy(const sc_time& t) {
  count_busy(t);
  // Work reported at issue starts when the engine is free of the work before it.
  const sc_time start = std::max(trace::current_time(), track_free_);
  track_free_ = start + t;
  trace_work(start, t, 0);
}

void Engine::trace_work(const sc_time& start, const sc_time& t, std::size_t lane) {
  if (lane == 0 && current_ && current_index_ < costs_.size() && t > sc_core::SC_ZERO_TIME) {
    InstructionCost& c = costs_[current_index_];
    const double from = trace::ns(start), to = trace::ns(start + t);
    c.work_start_ns = c.work_start_ns < 0 ? from : std::min(c.work_start_ns, from);
    c.work_end_ns = std::max(c.work_end_ns, to);
  }
  if (!ctx_.timeline || !current_) return;
  const int track = lane_tracks_.at(lane);
  const double start_ns = trace::ns(start), dur_ns = trace::ns(t);
  if (start + t >= last_slice_end_) {
    last_slice_end_ = start + t;
    last_slice_track_ = track;
  }
  nlohmann::json args = {{"instruction", arch::disassemble(*current_)}, {"index", current_index_}};
  ctx_.timeline->add_origin(track_, current_index_, args);
  ctx_.timeline->slice(track, start_ns, dur_ns, arch::to_string(current_->opcode), "instruction", std::move(args));
  ctx_.timeline->instruction(track_, current_index_, start_ns, start_ns + dur_ns);
  ctx_.timeline->instruction_slice(track_, current_index_, track, start_ns);
}

void Engine::wait_for_clock_edge() {
  const double periods = trace::current_time() / period_;
  const sc_time edge = period_ * std::ceil(periods);
  if (edge > trace::current_time()) sc_core::wait(edge - trace::current_time());
}

void Engine::read_device(std::uint64_t address, std::uint8_t* out, std::uint64_t length, sc_time& at) {
  tlm::tlm_generic_payload trans;
  trans.set_command(tlm::TLM_READ_COMMAND);
  trans.set_address(address);
  trans.set_data_ptr(out);
  trans.set_data_length(static_cast<unsigned>(length));
  trans.set_streaming_width(static_cast<unsigned>(length));
  trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  // Instruction fetch is a trickle next to DMA traffic (a few bytes per
  // hundreds of cycles), so it is charged HBM's unloaded latency and
  // bandwidth rather than queued with the DMA bursts booked ahead of it.
  if (fetch->transport_dbg(trans) != length)
    throw std::runtime_error(fmt::format("instruction fetch at 0x{:x} is outside device memory", address));
  at = std::max(at, trace::current_time()) + ctx_.hbm.unloaded_read_time(length);
}

void Engine::drain() {
  settle();
  const sc_time done = work_done_at();
  if (done > trace::current_time()) {
    wave_state(trace::WaveProbe::EngineState::Drain);
    sc_core::wait(done - trace::current_time());
  }
}

void Engine::wave_state(trace::WaveProbe::EngineState s) {
  if (ctx_.waves) ctx_.waves->engine_state(static_cast<int>(kind_), s);
}

sc_time Engine::request_blocks(std::uint64_t block) {
  const std::uint64_t blocks = (program_bytes_ + kFetchBlockBytes - 1) / kFetchBlockBytes;
  for (std::uint64_t b = block_time_.size(); b <= std::min(block + kPrefetchBlocks, blocks - 1); ++b) {
    const std::uint64_t start = b * kFetchBlockBytes;
    const std::uint64_t length = std::min(kFetchBlockBytes, program_bytes_ - start);
    // Requests go out one after another from the sequencer's single port,
    // each once the port has taken the one before's bytes: the prefetched
    // blocks' latencies overlap, so a stream is fetched at the memory's
    // bandwidth rather than one block per round trip.
    sc_time at = std::max(trace::current_time(), fetch_port_free_);
    fetch_port_free_ = at + (ctx_.hbm.unloaded_read_time(length) - ctx_.hbm.unloaded_read_time(0));
    read_device(program_address_ + start, buffer_.data() + start % buffer_.size(), length, at);
    block_time_.push_back(at);
  }
  return block_time_[block];
}

arch::Instruction Engine::fetch_next(std::uint64_t& pc, sc_time& fetch_ready) {
  if (pc + arch::kInstrHeaderBytes > program_bytes_)
    throw std::runtime_error(fmt::format("stream ends at byte {} without End", program_bytes_));
  fetch_ready = std::max(block_ready(pc), block_ready(pc + arch::kInstrHeaderBytes - 1));
  std::array<std::uint8_t, arch::kMaxInstrBytes> bytes;
  copy_fetched(pc, arch::kInstrHeaderBytes, bytes.data());
  const std::uint16_t length = arch::encoded_length(bytes.data());
  if (pc + length > program_bytes_)
    throw std::runtime_error(fmt::format("instruction at byte {} runs past the stream's end", pc));
  if (length > arch::kInstrHeaderBytes) fetch_ready = std::max(fetch_ready, block_ready(pc + length - 1));
  // A length past the longest encoding is malformed, and decode() says so
  // from the header alone (the fetch above may have run past what the
  // buffer holds of it).
  std::size_t available = arch::kInstrHeaderBytes;
  if (length > arch::kInstrHeaderBytes && length <= arch::kMaxInstrBytes) {
    copy_fetched(pc + arch::kInstrHeaderBytes, length - arch::kInstrHeaderBytes, bytes.data() + arch::kInstrHeaderBytes);
    available = length;
  }
  arch::Instruction in = arch::decode(bytes.data(), available, pc);
  pc += length;
  return in;
}

void Engine::copy_fetched(std::uint64_t at, std::size_t n, std::uint8_t* out) const {
  const std::size_t from = at % buffer_.size(), first = std::min(n, buffer_.size() - from);
  std::memcpy(out, buffer_.data() + from, first);
  std::memcpy(out + first, buffer_.data(), n - first);
}

void Engine::run() {
  if (program_bytes_ == 0) {
    finished_ = true;
    return;
  }
  std::uint64_t pc = 0;
  sc_time fetch_ready;
  for (std::uint64_t index = 0;; ++index) {
    const std::uint64_t at_byte = pc;
    arch::Instruction in;
    bool decoded = false;  // what the error names: the instruction once decoded
    costs_.emplace_back();
    try {
      in = fetch_next(pc, fetch_ready);
      decoded = true;
      if (const sc_time now = trace::current_time(); fetch_ready > now) {
        const sc_time stall = fetch_ready - now;
        wave_state(trace::WaveProbe::EngineState::FetchWait);
        stats_.fetch_wait_ns += trace::ns(stall);
        costs_[index].fetch_wait_ns += trace::ns(stall);
        if (ctx_.timeline)
          ctx_.timeline->slice(stall_track_, trace::ns(now), trace::ns(stall), "instruction fetch", "fetch");
        sc_core::wait(stall);
      }
      if (in.engine != kind_)
        throw std::runtime_error(fmt::format("instruction for the {} engine in the {} stream", to_string(in.engine),
                                             to_string(kind_)));
      const auto problems = arch::validate(in, ctx_.cfg);
      if (!problems.empty()) throw std::runtime_error(problems.front());
      if (index == 0) first_issue_time_ = trace::current_time();
      ++stats_.instructions;
      if (ctx_.waves) {
        ctx_.waves->engine_instruction(static_cast<int>(kind_), index, static_cast<std::uint8_t>(in.opcode));
        if (in.opcode <= arch::Opcode::SemSignal) wave_state(trace::WaveProbe::EngineState::Control);
      }
      current_ = &in;
      current_index_ = index;
      const sc_time issued = trace::current_time();
      costs_[index].issue_ns = trace::ns(issued);
      switch (in.opcode) {
        case arch::Opcode::End:
          drain();
          finished_ = true;
          end_time_ = trace::current_time();
          costs_[index].done_ns = trace::ns(end_time_);
          wave_state(trace::WaveProbe::EngineState::Done);
          return;
        case arch::Opcode::Nop: break;
        case arch::Opcode::SemWait: {
          const sc_time start = trace::current_time();
          if (ctx_.semaphores.visible_value(in.sem) < in.value) wave_state(trace::WaveProbe::EngineState::SemWait);
          ctx_.semaphores.wait_at_least(in.sem, in.value, name());
          if (trace::current_time() > start) {
            wait_for_clock_edge();
            const double waited = trace::ns(trace::current_time() - start);
            stats_.semaphore_wait_ns += waited;
            wait_by_semaphore_[in.sem] += waited;
            costs_[index].semaphore_wait_ns += waited;
            if (ctx_.timeline) {
              nlohmann::json args = {{"semaphore", in.sem}, {"value", in.value}, {"index", index}};
              ctx_.timeline->add_origin(track_, index, args);
              ctx_.timeline->slice(stall_track_, trace::ns(start), waited,
                                   fmt::format("wait sem {} >= {}", in.sem, in.value), "semaphore", std::move(args));
              ctx_.timeline->wait(in.sem, in.value, stall_track_, track_, index, trace::ns(start),
                                  trace::ns(trace::current_time()));
            }
          }
          break;
        }
        case arch::Opcode::SemIncr:
          drain();
          ctx_.semaphores.increment(in.sem, in.value);
          if (ctx_.timeline)
            // The arrow leaves the work this increment announces: the busy slice
            // that ended last (none before the engine's first: no arrow).
            ctx_.timeline->signal(in.sem, in.value, last_slice_track_, trace::ns(last_slice_end_),
                                  trace::ns(trace::current_time()));
          break;
        case arch::Opcode::SemSignal: {
          // Like SemIncr, it announces the work before it, on another core.
          drain();
          if (!ctx_.peers) throw std::runtime_error("SemSignal: this core is not on a chip (no other core to signal)");
          const std::string err = ctx_.peers->signal(in.address, in.value);
          if (!err.empty()) throw std::runtime_error(err);
          break;
        }
        case arch::Opcode::DmaTrigger: {
          drain();
          if (!ctx_.dma) throw std::runtime_error("this core has no DMA subsystem");
          const std::string err = ctx_.dma->ring(in.dma_engine, in.dma_queue, in.address, in.value);
          if (!err.empty()) throw std::runtime_error(err);
          break;
        }
        default: {
          wave_state(trace::WaveProbe::EngineState::Busy);
          const sc_time busy = execute(in);
          if (!reports_own_busy()) add_busy(busy);
          sc_core::wait(busy);
        }
      }
      costs_[index].done_ns = trace::ns(trace::current_time());
      if (ctx_.timeline)
        ctx_.timeline->instruction(track_, index, trace::ns(issued), trace::ns(trace::current_time()));
    } catch (const std::exception& e) {
      // The message is made only here: formatting and disassembling every
      // instruction on the way cost about 5 % of a timing-only run.
      wave_state(trace::WaveProbe::EngineState::Done);
      std::string where = fmt::format("{} instruction #{} (byte {})", to_string(kind_), index, at_byte);
      if (ctx_.origin_of) {
        const std::string origin = ctx_.origin_of(kind_, index);
        if (!origin.empty()) where += " " + origin;
      }
      if (decoded) where += ": " + arch::disassemble(in);
      ctx_.fail(fmt::format("{}: {}", where, e.what()));
      return;
    }
  }
}

}  // namespace tessera::core
