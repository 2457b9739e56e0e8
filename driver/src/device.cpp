#include "tessera/device.h"

#include "arch/numerics.h"
#include "core/chip.h"
#include "core/neuron_core.h"
#include "arch/dma_descriptor_check.h"
#include "engines/tensor_engine.h"
#include "cosim/dma_sampler.h"
#include "cosim/rtl_dma_engine.h"
#include "cosim/rtl_tensor_datapath.h"
#include "cosim/waves.h"
#include "run_timing.h"
#include "tessera/kernel_builder.h"
#include "trace/sim_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <cstring>
#include <functional>
#include <sstream>

namespace tessera {
namespace {

// Whom a wait on semaphore `sem` waits for: an engine's name, or "DMA" for
// any DMA queue.
std::string waited_for(const Program& program, std::size_t sem) {
  for (const auto& [index, name] : program.core_semaphores)
    if (index == sem) return fmt::format("other cores ('{}')", name);
  std::string owner = sem < program.semaphore_owners.size() ? program.semaphore_owners[sem]
                                                            : fmt::format("semaphore {}", sem);
  return owner.rfind("dma", 0) == 0 ? "DMA" : owner;
}

// The rate class of a matmul's inputs: the config's peak it runs against.
arch::TensorDType rate_class(arch::DType t) {
  switch (t) {
    case arch::DType::Fp32: return arch::TensorDType::Fp32;
    case arch::DType::Fp8E4m3: return arch::TensorDType::Fp8E4m3;
    case arch::DType::Fp8E5m2: return arch::TensorDType::Fp8E5m2;
    case arch::DType::Fp8E4m3x4:
    case arch::DType::Fp8E5m2x4:
    case arch::DType::Fp4E2m1x4: return arch::TensorDType::Mx;
    default: return arch::TensorDType::Bf16;
  }
}

// The peak a program's matmuls run against: every format's FLOPs at its own
// rate (HFU 100 % is each at its peak all the time).
double program_peak_tflops(const Program& program, const arch::ResolvedConfig& resolved) {
  const auto& peaks = resolved.derived.peak_tflops;
  const auto peak_of = [&](arch::TensorDType t) {
    const auto it = peaks.find(t);
    return it == peaks.end() ? 0.0 : it->second;
  };
  const double bf16 = peak_of(arch::TensorDType::Bf16);
  // The seconds each format's FLOPs take at its peak, summed: the peak is
  // the FLOPs over that (for one format, its own peak).
  double flops = 0, seconds_at_peak = 0;
  for (const auto& [dtype, f] : program.matmul_flops_by_dtype) {
    const double p = peak_of(rate_class(dtype));
    if (f <= 0 || p <= 0) continue;
    flops += f;
    seconds_at_peak += f / p;
  }
  const double rest = program.matmul_flops - flops;  // made by hand: bf16
  if (rest > 0 && bf16 > 0) {
    flops += rest;
    seconds_at_peak += rest / bf16;
  }
  return seconds_at_peak > 0 ? flops / seconds_at_peak : bf16;
}

// The figures a kernel author tunes by (docs/profiling.md).
void add_profile_figures(RunReport& report, const Program& program, core::NeuronCore& core,
                         const arch::ResolvedConfig& resolved, double hbm_peak_gbps) {
  const double seconds = report.time_ns * 1e-9;
  report.peak_tflops = program_peak_tflops(program, resolved);
  report.model_flops = program.model_flops > 0 ? program.model_flops : program.matmul_flops;
  if (seconds > 0) {
    report.achieved_tflops = program.matmul_flops / seconds / 1e12;
    if (report.peak_tflops > 0) {
      report.hfu_percent = 100.0 * program.matmul_flops / (seconds * report.peak_tflops * 1e12);
      report.mfu_percent = 100.0 * report.model_flops / (seconds * report.peak_tflops * 1e12);
    }
  }
  // HBM data traffic is what the program's descriptors move to and from
  // HBM: the memory's own counters miss timing-only runs, which move no bytes.
  for (const auto& [queue, ring] : program.rings)
    for (const arch::DmaDescriptor& d : ring) {
      std::uint64_t elements = 1;
      for (auto n : d.src_size) elements *= n;
      const std::uint64_t bytes = elements << d.elem_log2;
      for (std::uint64_t address : {d.src_addr, d.dst_addr})
        if (core.address_map().region_of(address, 1) == arch::Region::Hbm) report.hbm_bytes += static_cast<double>(bytes);
    }
  if (report.hbm_bytes > 0) report.arithmetic_intensity = program.matmul_flops / report.hbm_bytes;
  if (report.time_ns > 0) report.hbm_bandwidth_gbps = report.hbm_bytes / report.time_ns;  // bytes/ns = GB/s
  report.hbm_peak_gbps = hbm_peak_gbps;
  report.hbm_utilisation_percent = 100.0 * report.hbm_bandwidth_gbps / hbm_peak_gbps;
  const EngineReport& tensor = report.engines[to_string(arch::Engine::Tensor)];
  report.tensor_active_ns = tensor.busy_ns;
  report.tensor_multiplying_ns = core.tensor().tensor_stats().multiplying_ns.value();
  report.tensor_waiting_ns = tensor.semaphore_wait_ns + tensor.fetch_wait_ns;
  for (std::size_t e = 0; e < core.dma().engines(); ++e)
    report.dma_busy_ns += core.dma().engine(e).stats().busy_ns.value() / static_cast<double>(core.dma().engines());

  // Stalls by engine and by whom it waited for: DMA queues count as one.
  // The sync engine only rings doorbells and waits for the last DMAs to
  // land; its waiting costs nothing, so it is left out.
  std::map<std::pair<std::string, std::string>, double> stalls;
  for (int e = 0; e < arch::kNumEngines; ++e) {
    if (static_cast<arch::Engine>(e) == arch::Engine::Sync) continue;
    const std::string engine = to_string(static_cast<arch::Engine>(e));
    core::Engine& model = core.engine(static_cast<arch::Engine>(e));
    for (const auto& [sem, ns] : model.semaphore_wait_by_semaphore())
      stalls[{engine, "waiting for " + waited_for(program, sem)}] += ns;
    const double fetch = report.engines[engine].fetch_wait_ns;
    if (fetch > 0) stalls[{engine, "instruction fetch"}] += fetch;
  }
  for (const auto& [key, ns] : stalls) report.top_stalls.push_back({key.first, key.second, ns});
  std::sort(report.top_stalls.begin(), report.top_stalls.end(),
            [](const Stall& a, const Stall& b) { return a.ns > b.ns; });
  if (report.top_stalls.size() > 3) report.top_stalls.resize(3);
}

// The report's time by call site and by label: each engine's per-instruction
// costs, and each descriptor's queued and moving time, under the call site
// and label the builder gave it.
// The rows of by_site and by_label, keyed by their strings as the report
// shows them. A large run attributes millions of instructions and
// descriptors to a few hundred rows, so each (engine, call site) and
// (engine, label) finds its row through a cache keyed by numbers and makes
// its strings only the first time; each row still adds its costs in the
// order it did when it was looked up by string.
class AttributionRows {
 public:
  using Rows = std::map<std::pair<std::string, std::string>, SiteCost>;
  explicit AttributionRows(const Program& program) : program_(program) {}

  // `engine` is a small number naming `engine_name` (the engines, then DMA).
  SiteCost& by_site(std::uint32_t engine, const std::string& engine_name, const CallSite& where) {
    // Call sites whose file is unknown all read as "" (Program::site_name).
    const bool known = where.file >= 0 && static_cast<std::size_t>(where.file) < program_.source_files.size();
    const std::uint64_t key = (std::uint64_t{engine} << 56) |
                              (known ? (std::uint64_t(std::uint32_t(where.file) + 1) << 32) | where.line : 0);
    // Neighbouring instructions and descriptors mostly share their row.
    if (last_site_row_ && key == last_site_key_) return *last_site_row_;
    last_site_key_ = key;
    const auto cached = site_rows_.find(key);
    if (cached != site_rows_.end()) return *(last_site_row_ = cached->second);
    const std::string site = program_.site_name(where);
    SiteCost& row = sites_[{engine_name, site}];
    row.engine = engine_name;
    row.site = site;
    return *(last_site_row_ = site_rows_.emplace(key, &row).first->second);
  }
  SiteCost& by_label(std::uint32_t engine, const std::string& engine_name, const std::string& label) {
    // Labels are the Program's strings: one address per label name entry.
    if (last_label_row_ && engine == last_label_engine_ && &label == last_label_) return *last_label_row_;
    last_label_engine_ = engine;
    last_label_ = &label;
    const auto cached = label_rows_.find({engine, &label});
    if (cached != label_rows_.end()) return *(last_label_row_ = cached->second);
    SiteCost& row = labels_[{engine_name, label}];
    row.engine = engine_name;
    row.label = label;
    return *(last_label_row_ = label_rows_.emplace(std::make_pair(engine, &label), &row).first->second);
  }
  Rows& sites() { return sites_; }
  Rows& labels() { return labels_; }

 private:
  const Program& program_;
  Rows sites_, labels_;  // std::map: its rows stay where they are as it grows
  std::unordered_map<std::uint64_t, SiteCost*> site_rows_;
  std::map<std::pair<std::uint32_t, const std::string*>, SiteCost*> label_rows_;
  std::uint64_t last_site_key_ = 0;
  SiteCost* last_site_row_ = nullptr;
  std::uint32_t last_label_engine_ = 0;
  const std::string* last_label_ = nullptr;
  SiteCost* last_label_row_ = nullptr;
};

void add_attribution(RunReport& report, const Program& program, core::NeuronCore& core) {
  AttributionRows rows(program);
  const auto add = [&](std::uint32_t engine, const std::string& engine_name, const CallSite& where,
                       const std::string& label, const auto& cost) {
    cost(rows.by_site(engine, engine_name, where));
    cost(rows.by_label(engine, engine_name, label));
  };
  // Whom each semaphore's waits are for, named once.
  std::vector<std::string> waited_for_sem;
  for (std::size_t sem = 0; sem < program.semaphore_owners.size(); ++sem)
    waited_for_sem.push_back(waited_for(program, sem));
  std::string other_semaphore;
  const auto waited_for_name = [&](std::size_t sem) -> const std::string& {
    if (sem < waited_for_sem.size()) return waited_for_sem[sem];
    return other_semaphore = waited_for(program, sem);
  };
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const auto kind = static_cast<arch::Engine>(e);
    if (kind == arch::Engine::Sync) continue;  // its waiting costs nothing (add_profile_figures)
    const std::string engine = to_string(kind);
    const auto& stream = program.streams[static_cast<std::size_t>(e)];
    const auto& sites = program.sites[static_cast<std::size_t>(e)];
    const auto& costs = core.engine(kind).instruction_costs();
    for (std::size_t i = 0; i < costs.size() && i < stream.size(); ++i) {
      const core::Engine::InstructionCost& c = costs[i];
      const arch::Opcode opcode = stream.opcode(i);
      const bool counts = opcode != arch::Opcode::SemWait && opcode != arch::Opcode::SemIncr &&
                          opcode != arch::Opcode::End && opcode != arch::Opcode::Nop;
      if (!counts && c.busy_ns == 0 && c.semaphore_wait_ns == 0 && c.fetch_wait_ns == 0) continue;
      const std::string* whom = c.semaphore_wait_ns > 0 ? &waited_for_name(stream[i].sem) : nullptr;
      add(static_cast<std::uint32_t>(e), engine, i < sites.size() ? sites[i] : CallSite{}, program.label(kind, i),
          [&](SiteCost& r) {
            if (counts) r.count += 1;
            r.busy_ns += c.busy_ns;
            r.waiting_ns += c.semaphore_wait_ns;
            r.fetch_wait_ns += c.fetch_wait_ns;
            if (whom) r.waiting_for[*whom] += c.semaphore_wait_ns;
            if (c.fetch_wait_ns > 0) r.waiting_for["instruction fetch"] += c.fetch_wait_ns;
          });
    }
  }
  const std::string dma_name = "dma";
  const auto dma_engine = static_cast<std::uint32_t>(arch::kNumEngines);
  for (std::size_t e = 0; e < core.dma().engines(); ++e) {
    const dma::DmaEngineBase& engine = core.dma().engine(e);
    const auto e32 = static_cast<std::uint32_t>(e);
    const std::map<std::uint32_t, timing::QueueTimes> times = timing::queue_times(engine);
    for (const auto& [q, list] : timing::completions_by_queue(engine)) {
      const DmaQueueId id{e32, q};
      const auto ring = program.rings.find(id);
      const auto sites = program.ring_sites.find(id);
      const auto labels = program.ring_labels.find(id);
      const std::vector<std::uint32_t>* queue_labels = labels == program.ring_labels.end() ? nullptr : &labels->second;
      const auto found = times.find(q);
      const timing::QueueTimes* queue = found == times.end() ? nullptr : &found->second;
      sc_core::sc_time previous;
      for (const auto& [index, status] : list) {
        // Queued from when it could go (doorbell landed, the one before done)
        // to its first read; moving from there to its status write.
        const auto shown = queue ? queue->visible_at(index) : std::nullopt;
        const sc_core::sc_time ready = std::max(shown ? *shown : previous, previous);
        const auto start = queue ? queue->started_at(index) : std::nullopt;
        const sc_core::sc_time first_read = start ? std::min(std::max(*start, ready), status) : ready;
        previous = status;
        std::uint64_t bytes = 0;
        if (ring != program.rings.end() && index < ring->second.size())
          bytes = arch::dma_elements(ring->second[index].src_size) << ring->second[index].elem_log2;
        const CallSite where = sites != program.ring_sites.end() && index < sites->second.size() ? sites->second[index]
                                                                                                 : CallSite{};
        add(dma_engine, dma_name, where, program.label(queue_labels, index), [&](SiteCost& r) {
          r.count += 1;
          r.busy_ns += trace::ns(status - first_read);
          r.waiting_ns += trace::ns(first_read - ready);
          if (first_read > ready) r.waiting_for["queue"] += trace::ns(first_read - ready);
          r.dma_bytes += static_cast<double>(bytes);
        });
      }
    }
  }
  const auto sorted = [](std::map<std::pair<std::string, std::string>, SiteCost>& rows) {
    std::vector<SiteCost> out;
    for (auto& [key, row] : rows) out.push_back(std::move(row));
    std::stable_sort(out.begin(), out.end(),
                     [](const SiteCost& a, const SiteCost& b) { return a.total_ns() > b.total_ns(); });
    return out;
  };
  report.by_site = sorted(rows.sites());
  report.by_label = sorted(rows.labels());
}

// What the models could not record as they ran: the DMA queues' slices
// (from doorbells, starts, semaphore writes and completions), semaphore
// arrows, HBM bandwidth and SBUF/PSUM occupancy.
void finish_trace(trace::Timeline& timeline, const Program& program, core::NeuronCore& core, double end_ns) {
  // Descriptor (engine, queue, index) -> when it moved data, and the first
  // slice it drew (where the work a DmaTrigger rang starts).
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::pair<double, double>> descriptor_time;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, trace::Timeline::Point> descriptor_slice;
  for (const timing::DescriptorTime& t : timing::descriptor_times(program, core)) {
    const DmaQueueId id{t.engine, t.queue};
    const int track = timeline.track("DMA queues", fmt::format("dma {}.{}", t.engine, t.queue));
    const auto ring = program.rings.find(id);
    const auto sites = program.ring_sites.find(id);
    const arch::DmaDescriptor* d =
        ring != program.rings.end() && t.index < ring->second.size() ? &ring->second[t.index] : nullptr;
    descriptor_time[{t.engine, t.queue, t.index}] = {t.moving_from_ns, t.release_ns};
    nlohmann::json args = {{"index", t.index}, {"visible_ns", t.visible_ns}, {"status_ns", t.status_ns}};
    if (t.first_read_ns >= 0) args["first_read_ns"] = t.first_read_ns;
    std::string name = fmt::format("descriptor {}", t.index);
    if (d) {
      args["bytes"] = arch::dma_elements(d->src_size) << d->elem_log2;
      args["src"] = fmt::format("0x{:x}", d->src_addr);
      args["dst"] = fmt::format("0x{:x}", d->dst_addr);
    }
    if (const std::string& label = program.label(id, t.index); !label.empty()) {
      args["label"] = label;
      name = label;
    }
    if (sites != program.ring_sites.end() && t.index < sites->second.size())
      if (std::string site = program.site_name(sites->second[t.index]); !site.empty()) args["site"] = std::move(site);
    if (t.moving_from_ns > t.queued_from_ns) {
      timeline.slice(track, t.queued_from_ns, t.moving_from_ns - t.queued_from_ns, "queued", "dma queued", args);
      descriptor_slice[{t.engine, t.queue, t.index}] = {track, t.queued_from_ns};
    } else {
      descriptor_slice[{t.engine, t.queue, t.index}] = {track, t.moving_from_ns};
    }
    timeline.slice(track, t.moving_from_ns, t.release_ns - t.moving_from_ns, name, "dma", std::move(args));
    if (t.semaphore >= 0 && t.delta > 0)
      timeline.signal(static_cast<std::uint32_t>(t.semaphore), t.delta, track, t.release_ns, t.release_ns);
  }
  // A wait held back the engine's next instruction past its other waits: a
  // compute instruction (its first slice), or a DmaTrigger (the first
  // descriptor it rang).
  std::map<int, int> engine_of_track;
  for (int e = 0; e < arch::kNumEngines; ++e)
    engine_of_track[timeline.track("engines", to_string(static_cast<arch::Engine>(e)))] = e;
  timeline.link_semaphores([&](int engine_track, std::uint64_t index) -> std::optional<trace::Timeline::Point> {
    const auto e = engine_of_track.find(engine_track);
    if (e == engine_of_track.end()) return std::nullopt;
    const auto& stream = program.streams[static_cast<std::size_t>(e->second)];
    std::size_t j = static_cast<std::size_t>(index) + 1;
    while (j < stream.size() && (stream.opcode(j) == arch::Opcode::SemWait || stream.opcode(j) == arch::Opcode::Nop)) ++j;
    if (j >= stream.size()) return std::nullopt;
    const arch::Instruction in = stream[j];
    if (in.opcode == arch::Opcode::DmaTrigger) {
      const auto d = descriptor_slice.find({in.dma_engine, in.dma_queue, static_cast<std::uint32_t>(in.address)});
      if (d == descriptor_slice.end()) return std::nullopt;
      return d->second;
    }
    if (in.opcode < arch::Opcode::DmaTrigger || in.opcode == arch::Opcode::SemSignal)
      return std::nullopt;  // End, SemIncr, SemSignal: no work of its own
    return timeline.instruction_slice(engine_track, j);
  });

  // HBM bandwidth in windows of at least the model's bins, at most ~2000 of them.
  const double bin = memory::Hbm::bin_ns();
  const auto per_window = static_cast<std::int64_t>(std::max(1.0, std::ceil(end_ns / 2000.0 / bin)));
  std::map<std::int64_t, double> windows;
  for (const auto& [b, bytes] : core.hbm().traffic()) windows[b / per_window] += bytes;
  const double window_ns = bin * static_cast<double>(per_window);
  std::int64_t next = 0;
  for (const auto& [w, bytes] : windows) {
    if (w > next) timeline.counter("memory", "HBM bandwidth (GB/s)", static_cast<double>(next) * window_ns, 0);
    timeline.counter("memory", "HBM bandwidth (GB/s)", static_cast<double>(w) * window_ns, bytes / window_ns);
    next = w + 1;
  }
  timeline.counter("memory", "HBM bandwidth (GB/s)", static_cast<double>(next) * window_ns, 0);

  // SBUF / PSUM holding live data: each tile from the start of its first use
  // to the end of its last.
  const auto time_of = [&](const Program::OpRef& op) -> std::optional<std::pair<double, double>> {
    if (op.dma) {
      const auto it = descriptor_time.find({op.engine, op.queue, op.index});
      if (it == descriptor_time.end()) return std::nullopt;
      return it->second;
    }
    return timeline.instruction_time(timeline.track("engines", to_string(static_cast<arch::Engine>(op.engine))),
                                     op.index);
  };
  std::map<arch::Memory, std::map<double, double>> deltas;  // memory -> time -> bytes change
  for (const auto& t : program.tiles) {
    const auto first = time_of(t.first), last = time_of(t.last);
    if (!first || !last) continue;
    const double from = std::min(first->first, last->first), to = std::max(first->second, last->second);
    deltas[t.memory][from] += static_cast<double>(t.bytes);
    deltas[t.memory][to] -= static_cast<double>(t.bytes);
  }
  for (const auto& [memory, changes] : deltas) {
    const std::string name = memory == arch::Memory::Psum ? "PSUM live data (KiB)" : "SBUF live data (KiB)";
    double level = 0;
    timeline.counter("memory", name, 0, 0);
    for (const auto& [t, delta] : changes) {
      level += delta;
      timeline.counter("memory", name, t, std::max(0.0, level) / 1024.0);
    }
  }
}

// Places a program's DMA rings and instruction streams on a core. A large
// program's run to tens of MiB: they go to HBM through one buffer of 256
// KiB, filled and written piece by piece, not through a whole copy of each
// whose pages would all be faulted in afresh only to be copied once more.
void load(core::NeuronCore& core, const Program& program) {
  constexpr std::size_t kPieceBytes = std::size_t{256} << 10;
  memory::Hbm& hbm = core.hbm();
  std::vector<std::uint8_t> piece;
  piece.reserve(kPieceBytes + arch::kMaxInstrBytes);
  // Rings get one spare slot: a full ring would have HEAD == TAIL, which reads as empty.
  std::map<DmaQueueId, std::uint64_t> ring_base;
  std::size_t increments = 0;  // semaphore increments the program makes: completions and SemIncr
  for (const auto& [q, descriptors] : program.rings) {
    for (const arch::DmaDescriptor& d : descriptors) increments += (d.flags & arch::kDmaFlagCompletion) != 0;
    const std::size_t slots = descriptors.size() + 1;
    const std::uint64_t base = core.reserve_program(slots * arch::kDmaDescriptorBytes);
    constexpr std::size_t kPerPiece = kPieceBytes / arch::kDmaDescriptorBytes;
    for (std::size_t from = 0; from < slots; from += kPerPiece) {
      const std::size_t to = std::min(slots, from + kPerPiece);
      piece.assign((to - from) * arch::kDmaDescriptorBytes, 0);
      for (std::size_t i = from; i < std::min(to, descriptors.size()); ++i) {
        const auto packed = arch::pack(descriptors[i]);
        std::memcpy(&piece[(i - from) * arch::kDmaDescriptorBytes], packed.data(), packed.size());
      }
      hbm.backdoor_write(base + from * arch::kDmaDescriptorBytes, piece.data(), piece.size());
    }
    ring_base[q] = base;
    core.configure_dma_queue(q.first, q.second, base, static_cast<std::uint32_t>(slots));
  }
  // The streams are encoded already; a DmaTrigger's ring slot becomes its
  // descriptor's address. Pieces end between instructions.
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const InstructionStream& s = program.streams[static_cast<std::size_t>(e)];
    const std::vector<std::uint8_t>& bytes = s.bytes();
    const std::uint64_t base = core.reserve_program(bytes.size());
    for (std::size_t i = 0, from = 0; from < bytes.size();) {
      std::size_t end = i;  // instructions [i, end) begin in this piece
      while (end < s.size() && s.begin_of(end) < from + kPieceBytes) ++end;
      const std::size_t to = end < s.size() ? s.begin_of(end) : bytes.size();
      piece.assign(bytes.begin() + static_cast<std::ptrdiff_t>(from), bytes.begin() + static_cast<std::ptrdiff_t>(to));
      for (; i < end; ++i) {
        const arch::Opcode op = s.opcode(i);
        increments += op == arch::Opcode::SemIncr;
        if (op != arch::Opcode::DmaTrigger) continue;
        const arch::HeaderFields in = s.header(i);
        arch::put_address(piece.data() + (s.begin_of(i) - from),
                          ring_base.at({in.dma_engine, in.dma_queue}) + in.address * arch::kDmaDescriptorBytes);
      }
      hbm.backdoor_write(base + from, piece.data(), piece.size());
      from = to;
    }
    core.start_program(static_cast<arch::Engine>(e), base, bytes.size());
  }
  core.semaphores().expect_increments(increments);
}

// What one core's run tells: time, engines, DMA, the profile figures and
// the time by call site.
void fill_report(RunReport& report, const Program& program, core::NeuronCore& core, const core::RunResult& r,
                 const arch::ResolvedConfig& resolved, double hbm_peak_gbps) {
  report.ok = r.ok();
  report.error = r.message;
  report.time_ns = trace::ns(r.end_time);
  report.cycles = report.time_ns * resolved.hw.tensor.clock_ghz;
  report.tensor_utilisation = core.tensor().tensor_stats().utilisation.value();
  const dma::DmaSubsystem::DmaTotals& dma_totals = core.dma().stats();
  report.dma_bytes = dma_totals.bytes.value();
  report.dma_transfers = dma_totals.descriptors.value();
  report.dma_average_bytes = dma_totals.average_transfer_bytes.value();
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const core::Engine::EngineStats& s = core.engine(static_cast<arch::Engine>(e)).stats();
    report.engines[to_string(static_cast<arch::Engine>(e))] =
        EngineReport{s.instructions.value(), s.busy_ns.value(), s.semaphore_wait_ns.value(), s.fetch_wait_ns.value(),
                     s.memory_stall_ns.value()};
  }
  EngineReport dma{dma_totals.descriptors.value(), 0, 0, 0};
  for (std::size_t e = 0; e < core.dma().engines(); ++e)
    dma.busy_ns = std::max(dma.busy_ns, core.dma().engine(e).stats().busy_ns.value());
  report.engines["dma"] = dma;
  add_profile_figures(report, program, core, resolved, hbm_peak_gbps);
  add_attribution(report, program, core);
}

}  // namespace

namespace {
// The cores a device runs: those asked for, else one logical core's.
int cores_of(const DeviceOptions& options, const arch::ResolvedConfig& resolved) {
  return options.cores == 0 && resolved.hw.chip.lnc > 1 ? static_cast<int>(resolved.hw.chip.lnc) : options.cores;
}
}  // namespace

Device::Device(const DeviceOptions& options)
    : logical_core_(options.cores == 0),
      options_(options),
      resolved_(arch::load_config(options.config, options.overrides)),
      hw_(cores_of(options, resolved_) > 0 ? arch::core_on_chip(resolved_.hw) : resolved_.hw),
      fidelity_(options.fidelity.value_or(resolved_.hw.default_fidelity())) {
  options_.cores = cores_of(options, resolved_);
  logical_core_ = logical_core_ && options_.cores > 1;
  if (options_.cores < 0 || options_.cores > resolved_.hw.chip.cores) {
    const auto from = resolved_.from.find("chip.cores");
    throw KernelError(fmt::format("{} cores: a {} chip has {} (chip.cores{})", options_.cores, resolved_.hw.name,
                                  resolved_.hw.chip.cores,
                                  from == resolved_.from.end() ? ", the default" : ", " + from->second.str()));
  }
  if (options_.cores > 0 && (!options_.waves.empty() || options_.trace))
    throw KernelError("a waveform or a timeline of a multi-core run is not supported yet: run without --waves, "
                      "--trace and --html, or on one core");
  // Bad waveform options are caught before anything runs.
  if (!options_.waves.empty()) {
    try {
      if (!options_.waves_window.empty()) cosim::parse_wave_window(options_.waves_window, resolved_.hw);
      if (!options_.waves_scope.empty()) cosim::parse_wave_scope(options_.waves_scope);
    } catch (const std::invalid_argument& e) {
      throw KernelError(e.what());
    }
  }
}

Device::~Device() = default;

Tensor Device::allocate(const std::string& name, std::vector<std::int64_t> shape, DType dtype) {
  Tensor t{name, std::move(shape), dtype, 0};
  for (auto d : t.shape)
    if (d < 1) throw KernelError(fmt::format("allocate('{}'): dimension {} is not positive", name, d));
  const arch::AddressMap map(hw_);
  const std::uint64_t at = (hbm_next_ + 4095) / 4096 * 4096;
  if (at + t.bytes() > map.program_area_base())
    throw KernelError(fmt::format("allocate('{}'): {} bytes do not fit the {} bytes of HBM left for tensors", name,
                                  t.bytes(), map.program_area_base() - at));
  t.address = at;
  hbm_next_ = at + t.bytes();
  if (!options_.no_data) data_[at].assign(t.bytes(), 0);
  return t;
}

namespace {

// Bytes of element i of a narrow tensor (fp8, x4, uint8) from its values
// (values_per_element of them), and back: the encodings of docs/formats.md.
void encode_element(const Tensor& t, std::size_t i, const float* v, std::uint8_t* bytes) {
  switch (t.dtype) {
    case DType::Fp8E4m3: bytes[i] = arch::to_fp8_e4m3(v[0]); return;
    case DType::Fp8E5m2: bytes[i] = arch::to_fp8_e5m2(v[0]); return;
    case DType::Uint8:
      if (!(v[0] >= 0 && v[0] <= 255 && v[0] == std::floor(v[0])))
        throw KernelError(fmt::format("upload('{}'): value {} at element {} is not a uint8 (an E8M0 scale code "
                                      "0..255)", t.name, v[0], i));
      bytes[i] = static_cast<std::uint8_t>(v[0]);
      return;
    case DType::Fp8E4m3x4:
    case DType::Fp8E5m2x4: {
      const arch::ElementFormat f = *arch::element_format(t.dtype);
      for (int j = 0; j < 4; ++j) bytes[i * 4 + j] = arch::encode_narrow(f, v[j]);
      return;
    }
    case DType::Fp4E2m1x4:
      for (int j = 0; j < 2; ++j)
        bytes[i * 2 + j] = static_cast<std::uint8_t>(arch::to_fp4_e2m1(v[2 * j]) | (arch::to_fp4_e2m1(v[2 * j + 1]) << 4));
      return;
    default: break;
  }
  throw KernelError(fmt::format("upload('{}'): host upload of {} is not supported", t.name, to_string(t.dtype)));
}

void decode_element(const Tensor& t, std::size_t i, const std::uint8_t* bytes, float* v) {
  switch (t.dtype) {
    case DType::Fp8E4m3: v[0] = arch::fp8_e4m3_value(bytes[i]); return;
    case DType::Fp8E5m2: v[0] = arch::fp8_e5m2_value(bytes[i]); return;
    case DType::Uint8: v[0] = bytes[i]; return;
    case DType::Fp8E4m3x4:
    case DType::Fp8E5m2x4: {
      const arch::ElementFormat f = *arch::element_format(t.dtype);
      for (int j = 0; j < 4; ++j) v[j] = arch::narrow_value(f, bytes[i * 4 + j]);
      return;
    }
    case DType::Fp4E2m1x4:
      for (int j = 0; j < 4; ++j) v[j] = arch::fp4_e2m1_value(static_cast<std::uint8_t>(bytes[i * 2 + j / 2] >> (4 * (j % 2))) & 0xF);
      return;
    default: break;
  }
  throw KernelError(fmt::format("download('{}'): {} is not supported", t.name, to_string(t.dtype)));
}

}  // namespace

void Device::upload(const Tensor& t, const std::vector<float>& values) {
  const std::size_t per = arch::values_per_element(t.dtype);
  if (static_cast<std::int64_t>(values.size()) != t.elements() * static_cast<std::int64_t>(per))
    throw KernelError(fmt::format("upload('{}'): {} values for {} elements{}", t.name, values.size(), t.elements(),
                                  per > 1 ? fmt::format(" of {} values each ({})", per, to_string(t.dtype)) : ""));
  if (options_.no_data) return;
  auto& bytes = data_.at(t.address);
  // The element count once (Tensor::elements() multiplies the shape out),
  // and fp32 as it is: the two loops were 13 % of a with-data layernorm.
  const auto n = static_cast<std::size_t>(t.elements());
  if (t.dtype == DType::Fp32) {
    if (n > 0) std::memcpy(bytes.data(), values.data(), 4 * n);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::Bf16: {
        const std::uint16_t b = arch::to_bf16(values[i]).bits;
        std::memcpy(&bytes[i * 2], &b, 2);
        break;
      }
      default: encode_element(t, i, &values[i * per], bytes.data()); break;
    }
  }
}

std::vector<float> Device::download(const Tensor& t) const {
  const std::size_t per = arch::values_per_element(t.dtype);
  std::vector<float> out(static_cast<std::size_t>(t.elements()) * per, 0.0f);
  if (options_.no_data) return out;
  const auto& bytes = data_.at(t.address);
  const auto n = static_cast<std::size_t>(t.elements());
  if (t.dtype == DType::Fp32) {
    if (n > 0) std::memcpy(out.data(), bytes.data(), 4 * n);
    return out;
  }
  for (std::size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::Bf16: {
        std::uint16_t b;
        std::memcpy(&b, &bytes[i * 2], 2);
        out[i] = arch::to_float(arch::Bf16::from_bits(b));
        break;
      }
      default: decode_element(t, i, bytes.data(), &out[i * per]); break;
    }
  }
  return out;
}

RunReport Device::run(const Program& program) {
  if (options_.cores > 1)
    throw KernelError(fmt::format("Device::run: this device has {} cores: launch a grid of {} instances "
                                  "(Device::launch), one program per core",
                                  options_.cores, options_.cores));
  if (on_chip()) return run_chip({program});
  return run_single(program);
}

RunReport Device::launch(const std::function<Program(const Spmd&)>& build, int grid) {
  if (grid != cores())
    throw KernelError(fmt::format("launch: a grid of {} instances on a device of {} core{}: an SPMD launch runs "
                                  "instance i on core i, so the grid must be the cores (DeviceOptions::cores, "
                                  "tessera run --cores)",
                                  grid, cores(), cores() == 1 ? "" : "s"));
  const auto build_start = std::chrono::steady_clock::now();
  std::vector<Program> programs;
  for (int i = 0; i < grid; ++i) programs.push_back(build(Spmd{i, grid}));
  const double build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - build_start).count();
  RunReport report = on_chip() ? run_chip(programs) : run_single(programs.front());
  report.build_seconds = build_seconds;
  return report;
}

RunReport Device::run(const std::vector<Program>& programs) {
  if (static_cast<int>(programs.size()) != cores())
    throw KernelError(fmt::format("Device::run: {} programs for a device of {} core{}: one program per core",
                                  programs.size(), cores(), cores() == 1 ? "" : "s"));
  if (!on_chip()) return run_single(programs.front());
  return run_chip(programs);
}

namespace {
// SystemC runs one simulation per process.
void claim_the_simulation(bool& ran) {
  static bool process_ran = false;
  if (process_ran || ran)
    throw KernelError("Device::run: SystemC runs one simulation per process; run each program in its own process "
                      "(as `tessera run` does)");
  ran = process_ran = true;
}

// The options every core of a run gets from the device's fidelity.
core::CoreOptions core_options_for(arch::Fidelity fidelity, bool no_data, const arch::HwConfig& hw,
                                   cosim::WaveRecorder* waves, const std::string& failure_waves_dir) {
  core::CoreOptions o;
  o.fidelity = fidelity;
  o.no_data = no_data;
  o.waves = waves;
  // rtl and sampled need the Verilated tensor engine; tlm gets the fast model from it too.
  o.tensor_datapath = cosim::rtl_tensor_factory(waves, failure_waves_dir);
  // In rtl fidelity the DMA engines are the Verilated RTL too. sampled runs
  // the fast DMA model and re-executes a sample of descriptors on the RTL.
  if (fidelity == arch::Fidelity::Rtl) o.dma_engine = cosim::rtl_dma_factory(hw);
  if (fidelity == arch::Fidelity::Sampled) o.dma_sampler = cosim::rtl_dma_sampler_factory(hw);
  return o;
}

// Once the simulation is over, the tensors' bytes are read back and HBM's
// store is dropped: nothing reads device memory again, and the report built
// next (its critical path above all) then has the memory the program's
// image took, its streams and descriptor rings (72 MB of the
// 4096x8192x8192 GEMM's peak).
void read_back_and_release(memory::Hbm& hbm, std::map<std::uint64_t, std::vector<std::uint8_t>>& data) {
  for (auto& [address, bytes] : data) hbm.backdoor_read(address, bytes.data(), bytes.size());
  hbm.release_contents();
}
}  // namespace

RunReport Device::run_chip(const std::vector<Program>& programs) {
  claim_the_simulation(ran_);
  const auto wall_start = std::chrono::steady_clock::now();
  trace::Stats stats;
  const std::size_t n = programs.size();
  const core::CoreOptions shared = core_options_for(fidelity_, options_.no_data, hw_, nullptr, options_.failure_waves_dir);
  core::Chip chip(resolved_.hw, n, stats, [&](std::size_t i) {
    core::CoreOptions o = shared;
    const Program* program = &programs[i];
    o.origin_of = [program](arch::Engine e, std::uint64_t index) {
      return program->origin(e, static_cast<std::size_t>(index));
    };
    o.descriptor_origin_of = [program](std::uint32_t engine, std::uint32_t queue, std::uint64_t index) {
      return program->origin(DmaQueueId{engine, queue}, static_cast<std::size_t>(index));
    };
    return o;
  });
  for (const auto& [address, bytes] : data_) chip.hbm().backdoor_write(address, bytes.data(), bytes.size());
  for (std::size_t i = 0; i < n; ++i) {
    // The DMA semaphore writes' landing times, for the collectives' wall times.
    chip.core(i).semaphores().keep_increments(true);
    load(chip.core(i), programs[i]);
  }
  const auto simulate_start = std::chrono::steady_clock::now();
  const core::ChipRunResult r = chip.run();
  const auto simulate_end = std::chrono::steady_clock::now();
  read_back_and_release(chip.hbm(), data_);
  const auto analysis_start = std::chrono::steady_clock::now();

  const double chip_peak = hw_.hbm.bandwidth_gbps;
  std::vector<RunReport> per(n);
  for (std::size_t i = 0; i < n; ++i) {
    per[i].matmul_flops = programs[i].matmul_flops;
    fill_report(per[i], programs[i], chip.core(i), r.cores[i], resolved_, chip_peak);
  }
  // The chip's report: the core that ended last sets the time, and its
  // engines, stalls and call sites are the report's.
  std::size_t last = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (per[i].time_ns > per[last].time_ns) last = i;
  RunReport report = per[last];
  report.kernel = programs.front().name;
  report.config = resolved_.hw.name;
  report.fidelity = arch::to_string(fidelity_);
  report.ok = r.chip.ok();
  report.error = r.chip.message;
  report.time_ns = trace::ns(r.chip.end_time);
  report.cycles = report.time_ns * hw_.tensor.clock_ghz;
  report.critical_core = static_cast<int>(last);
  report.matmul_flops = report.model_flops = report.dma_bytes = report.dma_transfers = report.hbm_bytes = 0;
  report.tensor_utilisation = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const RunReport& c = per[i];
    report.matmul_flops += c.matmul_flops;
    report.model_flops += c.model_flops;
    report.dma_bytes += c.dma_bytes;
    report.dma_transfers += c.dma_transfers;
    report.hbm_bytes += c.hbm_bytes;
    report.tensor_utilisation += c.tensor_utilisation / static_cast<double>(n);
    report.per_core.push_back(CoreReport{c.time_ns, c.matmul_flops, 0, c.tensor_active_ns, c.tensor_waiting_ns,
                                         c.dma_bytes, c.hbm_bytes, c.hbm_bandwidth_gbps, c.bound_by()});
    const core::ChipFabric::PortStats& port = chip.fabric().port_stats(i);
    CoreReport& core_row = report.per_core.back();
    core_row.link_bytes_sent = port.bytes_sent.value();
    core_row.link_bytes_received = port.bytes_received.value();
    core_row.link_send_busy_ns = port.send_busy_ns.value();
    core_row.link_receive_busy_ns = port.receive_busy_ns.value();
    if (r.chip.ok() && !programs[i].collective_labels.empty()) {
      const timing::LabelTime t =
          timing::label_time(timing::run_events(programs[i], chip.core(i)).events, programs[i].collective_labels);
      core_row.collective_ns = t.total_ns;
      if (i == last) {
        report.collectives = t.phases;
        report.collective_ns = t.total_ns;
      }
    }
  }
  // The chip's peak: each core's, for the formats its program runs.
  report.peak_tflops = 0;
  for (const RunReport& c : per) report.peak_tflops += c.peak_tflops;
  const double seconds = report.time_ns * 1e-9;
  report.hfu_percent = report.mfu_percent = report.achieved_tflops = 0;
  if (seconds > 0 && report.peak_tflops > 0) {
    report.hfu_percent = 100.0 * report.matmul_flops / (seconds * report.peak_tflops * 1e12);
    report.mfu_percent = 100.0 * report.model_flops / (seconds * report.peak_tflops * 1e12);
    report.achieved_tflops = report.matmul_flops / seconds / 1e12;
    for (std::size_t i = 0; i < n; ++i) {
      CoreReport& c = report.per_core[i];
      c.hfu_percent = per[i].peak_tflops > 0 ? 100.0 * c.matmul_flops / (seconds * per[i].peak_tflops * 1e12) : 0;
    }
  }
  report.dma_average_bytes = report.dma_transfers > 0 ? report.dma_bytes / report.dma_transfers : 0;
  report.arithmetic_intensity = report.hbm_bytes > 0 ? report.matmul_flops / report.hbm_bytes : 0;
  report.hbm_bandwidth_gbps = report.time_ns > 0 ? report.hbm_bytes / report.time_ns : 0;
  report.hbm_peak_gbps = chip_peak;
  report.hbm_utilisation_percent = 100.0 * report.hbm_bandwidth_gbps / chip_peak;
  report.stats = stats.to_json();
  report.simulate_seconds = std::chrono::duration<double>(simulate_end - simulate_start).count();
  report.analysis_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - analysis_start).count();
  stats_text_ = [&] {
    std::ostringstream os;
    stats.dump(os);
    return os.str();
  }();
  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return report;
}

RunReport Device::run_single(const Program& program) {
  claim_the_simulation(ran_);
  const auto wall_start = std::chrono::steady_clock::now();

  RunReport report;
  report.kernel = program.name;
  report.config = resolved_.hw.name;
  report.fidelity = arch::to_string(fidelity_);
  report.matmul_flops = program.matmul_flops;

  trace::Stats stats;
  std::unique_ptr<cosim::WaveRecorder> waves;
  if (!options_.waves.empty()) {
    cosim::WaveOptions w;
    w.path = options_.waves;
    if (!options_.waves_window.empty()) w.window = cosim::parse_wave_window(options_.waves_window, resolved_.hw);
    if (!options_.waves_scope.empty()) w.scope = cosim::parse_wave_scope(options_.waves_scope);
    // Each distinct call site and label once, in the order instructions name them.
    cosim::WaveOrigins origins;
    std::map<std::string, std::uint32_t> origin_ids;
    for (int e = 0; e < arch::kNumEngines; ++e) {
      auto& of = origins.instruction.emplace_back();
      for (std::size_t i = 0; i < program.streams[e].size(); ++i) {
        std::string name = program.origin(static_cast<arch::Engine>(e), i);
        if (name.empty()) name = "(unknown)";
        const auto [it, added] = origin_ids.emplace(name, static_cast<std::uint32_t>(origins.names.size()));
        if (added) origins.names.push_back(std::move(name));
        of.push_back(it->second);
      }
    }
    waves = std::make_unique<cosim::WaveRecorder>(w, resolved_.hw, std::move(origins));
  }
  std::unique_ptr<trace::Timeline> timeline;
  if (options_.trace) timeline = std::make_unique<trace::Timeline>();
  core::CoreOptions core_options = core_options_for(fidelity_, options_.no_data, hw_, waves.get(), options_.failure_waves_dir);
  core_options.timeline = timeline.get();
  core_options.origin_of = [&program](arch::Engine e, std::uint64_t index) {
    return program.origin(e, static_cast<std::size_t>(index));
  };
  core_options.descriptor_origin_of = [&program](std::uint32_t engine, std::uint32_t queue, std::uint64_t index) {
    return program.origin(DmaQueueId{engine, queue}, static_cast<std::size_t>(index));
  };
  auto core_owner = std::make_unique<core::NeuronCore>("core", hw_, stats, core_options);
  core::NeuronCore& core = *core_owner;
  for (const auto& [address, bytes] : data_) core.hbm().backdoor_write(address, bytes.data(), bytes.size());
  // The DMA semaphore writes' landing times, for the critical path.
  core.semaphores().keep_increments(true);
  load(core, program);

  if (timeline) {
    for (int e = 0; e < arch::kNumEngines; ++e) {
      const int track = timeline->track("engines", to_string(static_cast<arch::Engine>(e)));
      std::vector<std::string> labels;
      labels.reserve(program.labels[e].size());
      for (std::size_t i = 0; i < program.labels[e].size(); ++i)
        labels.push_back(program.label(static_cast<arch::Engine>(e), i));
      timeline->set_labels(track, std::move(labels));
      std::vector<std::string> sites;
      for (const CallSite& site : program.sites[e]) sites.push_back(program.site_name(site));
      timeline->set_sites(track, std::move(sites));
    }
    core.hbm().record_traffic(true);
  }

  const auto simulate_start = std::chrono::steady_clock::now();
  const core::RunResult r = core.run();
  const auto simulate_end = std::chrono::steady_clock::now();
  read_back_and_release(core.hbm(), data_);
  const auto analysis_start = std::chrono::steady_clock::now();
  report.simulate_seconds = std::chrono::duration<double>(simulate_end - simulate_start).count();
  fill_report(report, program, core, r, resolved_, hw_.hbm.bandwidth_gbps);
  if (report.ok) {
    timing::RunEvents events = timing::run_events(program, core);
    const std::vector<timing::Work> work = timing::run_work(program, core, events);
    // The trace reads the records again; otherwise they are done with.
    if (!timeline) core.release_records();
    report.critical_path = timing::critical_path(events.events, work);
  }
  report.stats = stats.to_json();
  report.analysis_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - analysis_start).count();
  if (timeline) {
    finish_trace(*timeline, program, core, report.time_ns);
    trace_ = timeline->to_json();
  }
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  stats_text_ = [&] {
    std::ostringstream os;
    stats.dump(os);
    return os.str();
  }();
  if (waves) {
    // The Verilated models close their traces when destroyed.
    core_owner.reset();
    const auto w = waves->finish(trace::now_ps());
    waves_gtkw_ = w.gtkw;
    report.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  }
  return report;
}

}  // namespace tessera
