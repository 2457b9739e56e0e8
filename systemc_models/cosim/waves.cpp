// The FST reader and writer are the ones Verilator ships (gtkwave/fstapi.h);
// their code is compiled into this library with Verilator's FST tracing
// (verilated_fst_c.cpp includes fstapi.c), so only the header is needed here.
#include <gtkwave/fstapi.h>

#include "cosim/waves.h"

#include "arch/isa.h"
#include "trace/sim_time.h"

#include <fmt/format.h>

#include <systemc>

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

namespace tessera::cosim {
namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

double clock_period_ps(const std::string& clock, const arch::HwConfig& cfg) {
  auto from_ghz = [](double ghz) { return 1000.0 / ghz; };
  if (clock == "tensor") return from_ghz(cfg.tensor.clock_ghz);
  if (clock == "vector" || clock == "sync") return from_ghz(cfg.vector.clock_ghz);
  if (clock == "scalar") return from_ghz(cfg.scalar.clock_ghz);
  if (clock == "gpsimd") return from_ghz(cfg.gpsimd.clock_ghz);
  if (clock == "dma") return 1000.0 * static_cast<double>(cfg.dma.axi_data_bytes) / cfg.dma.bytes_per_ns;
  throw std::invalid_argument(fmt::format(
      "--waves-window: unknown clock '{}' before '@' (clocks: tensor, vector, scalar, gpsimd, sync, dma)", clock));
}

// One bound of a window: a number with an optional unit (ns without one), or
// a cycle count when a clock was named.
std::uint64_t parse_bound(const std::string& text, const std::string& which, double cycle_ps) {
  const std::string t = trim(text);
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(t, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument(fmt::format("--waves-window: {} bound '{}' is not a number", which, t));
  }
  const std::string unit = trim(t.substr(used));
  if (value < 0 || !std::isfinite(value))
    throw std::invalid_argument(fmt::format("--waves-window: {} bound '{}' must not be negative", which, t));
  double scale = 0;
  if (cycle_ps > 0) {
    if (!unit.empty())
      throw std::invalid_argument(fmt::format(
          "--waves-window: {} bound '{}': with a clock named the bounds are cycles and take no unit", which, t));
    scale = cycle_ps;
  } else if (unit.empty() || unit == "ns") {
    scale = 1e3;
  } else if (unit == "ps") {
    scale = 1;
  } else if (unit == "us") {
    scale = 1e6;
  } else if (unit == "ms") {
    scale = 1e9;
  } else {
    throw std::invalid_argument(
        fmt::format("--waves-window: {} bound '{}': unknown unit '{}' (ps, ns, us, ms)", which, t, unit));
  }
  return static_cast<std::uint64_t>(std::llround(value * scale));
}

std::string engine_name(int e) { return arch::to_string(static_cast<arch::Engine>(e)); }

// The opcodes the ISA defines, as (value, name).
std::vector<std::pair<unsigned, std::string>> opcode_names() {
  std::vector<std::pair<unsigned, std::string>> out;
  for (unsigned v = 0; v < 256; ++v)
    if (const char* n = arch::to_string(static_cast<arch::Opcode>(v))) out.emplace_back(v, n);
  return out;
}

std::string bits_of(std::uint64_t v, std::uint32_t width) {
  std::string s(width, '0');
  for (std::uint32_t i = 0; i < width && i < 64; ++i)
    if ((v >> i) & 1) s[width - 1 - i] = '1';
  return s;
}

}  // namespace

WaveWindow parse_wave_window(const std::string& spec, const arch::HwConfig& cfg) {
  std::string rest = trim(spec);
  double cycle_ps = 0;
  if (const auto at = rest.find('@'); at != std::string::npos) {
    cycle_ps = clock_period_ps(trim(rest.substr(0, at)), cfg);
    rest = rest.substr(at + 1);
  }
  const auto colon = rest.find(':');
  if (colon == std::string::npos || rest.find(':', colon + 1) != std::string::npos)
    throw std::invalid_argument(fmt::format(
        "--waves-window '{}': expected FROM:TO (e.g. 1000:5000 in ns, 2us:4us, tensor@100:400)", spec));
  WaveWindow w;
  const std::string from = trim(rest.substr(0, colon)), to = trim(rest.substr(colon + 1));
  if (!from.empty()) w.from_ps = parse_bound(from, "start", cycle_ps);
  if (!to.empty()) w.to_ps = parse_bound(to, "end", cycle_ps);
  if (w.from_ps > w.to_ps)
    throw std::invalid_argument(fmt::format("--waves-window '{}': the start is after the end", spec));
  return w;
}

WaveScope parse_wave_scope(const std::string& spec) {
  WaveScope s;
  s.tlm = false;
  s.tensor_depth = 0;
  s.dma_depth = 0;
  bool any_dma = false, all_dma = false;
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const auto comma = std::min(spec.find(',', pos), spec.size());
    const std::string item = trim(spec.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) throw std::invalid_argument(fmt::format("--waves-scope '{}': empty item", spec));
    std::string name = item;
    int depth = -1;
    if (const auto c = item.find(':'); c != std::string::npos) {
      name = item.substr(0, c);
      const std::string d = item.substr(c + 1);
      char* end = nullptr;
      const long v = std::strtol(d.c_str(), &end, 10);
      if (d.empty() || *end != '\0' || v < 1)
        throw std::invalid_argument(
            fmt::format("--waves-scope: '{}': the depth after ':' must be a whole number >= 1", item));
      depth = static_cast<int>(v);
    }
    if (name == "tlm") {
      if (depth != -1) throw std::invalid_argument(fmt::format("--waves-scope: '{}': tlm takes no depth", item));
      s.tlm = true;
    } else if (name == "tensor") {
      s.tensor_depth = depth;
    } else if (name.rfind("dma", 0) == 0) {
      const std::string n = name.substr(3);
      if (!n.empty() && (n.find_first_not_of("0123456789") != std::string::npos))
        throw std::invalid_argument(fmt::format("--waves-scope: unknown item '{}' (tlm, tensor, dma, dmaN)", item));
      if (any_dma && s.dma_depth != depth)
        throw std::invalid_argument(fmt::format("--waves-scope: '{}': every DMA engine is traced to one depth", item));
      s.dma_depth = depth;
      any_dma = true;
      if (n.empty()) all_dma = true;
      else s.dma.insert(static_cast<std::uint32_t>(std::stoul(n)));
    } else {
      throw std::invalid_argument(fmt::format("--waves-scope: unknown item '{}' (tlm, tensor, dma, dmaN)", item));
    }
  }
  if (all_dma) s.dma.clear();
  return s;
}

std::string waves_open_command(const std::string& fst) { return "scripts/waves " + fst; }

// ---------------------------------------------------------------------------
// The transaction-level signals, written as they change into their own part.

class WaveRecorder::TlmPart {
public:
  TlmPart(const std::string& path, const arch::HwConfig& cfg, const WaveWindow& window, WaveOrigins origins)
      : window_(window), origins_(std::move(origins)) {
    fst_ = fstWriterCreate(path.c_str(), 1);
    if (!fst_) throw std::runtime_error(fmt::format("cannot write the waveform part {}", path));
    fstWriterSetTimescale(fst_, -12);
    fstWriterSetPackType(fst_, FST_WR_PT_LZ4);

    std::vector<std::string> op_names, op_values;
    for (const auto& [v, n] : opcode_names()) {
      op_names.push_back(n);
      op_values.push_back(bits_of(v, 8));
    }
    std::vector<const char*> op_n, op_v;
    for (std::size_t i = 0; i < op_names.size(); ++i) {
      op_n.push_back(op_names[i].c_str());
      op_v.push_back(op_values[i].c_str());
    }
    const fstEnumHandle opcode_enum = fstWriterCreateEnumTable(fst_, "opcode", static_cast<std::uint32_t>(op_n.size()),
                                                               8, op_n.data(), op_v.data());
    std::vector<std::string> st_values;
    std::vector<const char*> st_n, st_v;
    for (unsigned i = 0; i < std::size(kEngineStateNames); ++i) st_values.push_back(bits_of(i, 3));
    for (unsigned i = 0; i < std::size(kEngineStateNames); ++i) {
      st_n.push_back(kEngineStateNames[i]);
      st_v.push_back(st_values[i].c_str());
    }
    const fstEnumHandle state_enum = fstWriterCreateEnumTable(fst_, "engine_state",
                                                              static_cast<std::uint32_t>(st_n.size()), 3,
                                                              st_n.data(), st_v.data());

    // The origin enum: value 0 before an engine's first instruction, v + 1
    // for origins_.names[v].
    std::uint32_t origin_bits = 1;
    while (origin_bits < 32 && (std::uint64_t{1} << origin_bits) <= origins_.names.size()) ++origin_bits;
    std::vector<std::string> origin_values;
    std::vector<const char*> origin_n = {"(none)"}, origin_v;
    for (std::size_t v = 0; v <= origins_.names.size(); ++v) origin_values.push_back(bits_of(v, origin_bits));
    for (const auto& n : origins_.names) origin_n.push_back(n.c_str());
    for (const auto& v : origin_values) origin_v.push_back(v.c_str());
    const fstEnumHandle origin_enum = fstWriterCreateEnumTable(
        fst_, "origin", static_cast<std::uint32_t>(origin_n.size()), origin_bits, origin_n.data(), origin_v.data());

    fstWriterSetScope(fst_, FST_ST_VCD_MODULE, "tlm", nullptr);
    for (int e = 0; e < arch::kNumEngines; ++e) {
      fstWriterSetScope(fst_, FST_ST_VCD_MODULE, engine_name(e).c_str(), nullptr);
      Engine& en = engines_[e];
      fstWriterEmitEnumTableRef(fst_, opcode_enum);
      en.opcode = var("opcode", 8, engine_name(e) + ".opcode", 0);
      en.index = var("instr_index", 32, engine_name(e) + ".instr_index", 0);
      fstWriterEmitEnumTableRef(fst_, origin_enum);
      en.origin = var("origin", origin_bits, engine_name(e) + ".origin", 0);
      fstWriterEmitEnumTableRef(fst_, state_enum);
      en.state = var("state", 3, engine_name(e) + ".state", 0);
      en.busy = var("busy", 1, engine_name(e) + ".busy", 0);
      en.stalled = var("stalled", 1, engine_name(e) + ".stalled", 0);
      fstWriterSetUpscope(fst_);
    }
    fstWriterSetScope(fst_, FST_ST_VCD_MODULE, "semaphores", nullptr);
    for (std::int64_t i = 0; i < cfg.sync.semaphores; ++i)
      sems_.push_back(var(fmt::format("sem{}", i).c_str(), 32, fmt::format("semaphores.sem{}", i), 0));
    fstWriterSetUpscope(fst_);
    for (std::int64_t e = 0; e < cfg.dma.engines; ++e) {
      fstWriterSetScope(fst_, FST_ST_VCD_MODULE, fmt::format("dma{}", e).c_str(), nullptr);
      std::vector<int> qs;
      for (std::int64_t q = 0; q < cfg.dma.queues_per_engine; ++q)
        qs.push_back(var(fmt::format("q{}_depth", q).c_str(), 16, fmt::format("dma{}.q{}_depth", e, q), 0));
      queues_.push_back(std::move(qs));
      fstWriterSetUpscope(fst_);
    }
    for (const char* mem : {"sbuf", "psum"}) {
      fstWriterSetScope(fst_, FST_ST_VCD_MODULE, mem, nullptr);
      traffic_.push_back({var("bytes_read", 64, std::string(mem) + ".bytes_read", 0),
                          var("bytes_written", 64, std::string(mem) + ".bytes_written", 0)});
      fstWriterSetUpscope(fst_);
    }
    fstWriterSetUpscope(fst_);
  }
  ~TlmPart() { close(std::nullopt); }

  void instruction(int e, std::uint64_t index, std::uint8_t opcode) {
    change(engines_[e].index, index);
    change(engines_[e].opcode, opcode);
    const std::vector<std::uint32_t>* of =
        static_cast<std::size_t>(e) < origins_.instruction.size() ? &origins_.instruction[e] : nullptr;
    change(engines_[e].origin, of && index < of->size() ? (*of)[index] + 1 : 0);
  }
  void state(int e, EngineState s) {
    change(engines_[e].state, static_cast<std::uint64_t>(s));
    change(engines_[e].busy, s == EngineState::Busy);
    change(engines_[e].stalled, s == EngineState::SemWait || s == EngineState::FetchWait || s == EngineState::Drain);
  }
  void semaphore(std::size_t i, std::uint32_t v) {
    if (i < sems_.size()) change(sems_[i], v);
  }
  void queue(std::uint32_t e, std::uint32_t q, std::uint32_t depth) {
    if (e < queues_.size() && q < queues_[e].size()) change(queues_[e][q], depth);
  }
  void traffic(Memory m, bool write, std::uint64_t bytes) {
    const int v = traffic_[static_cast<int>(m)][write ? 1 : 0];
    change(v, vars_[v].value + bytes);
  }

  // Signals whose value ever changed from their initial value.
  std::set<std::string> changed() const {
    std::set<std::string> out;
    for (const Var& v : vars_)
      if (v.ever_changed) out.insert("tlm." + v.name);
    return out;
  }

  void close(std::optional<std::uint64_t> end_ps) {
    if (!fst_) return;
    if (end_ps) {
      const std::uint64_t last = std::min(*end_ps, window_.to_ps);
      if (last >= window_.from_ps) {
        open_at(window_.from_ps);
        if (last > last_time_) fstWriterEmitTimeChange(fst_, last);
      }
    }
    fstWriterClose(fst_);
    fst_ = nullptr;
  }

private:
  struct Var {
    fstHandle handle;
    std::uint32_t bits;
    std::string name;
    std::uint64_t value;
    bool ever_changed = false;
  };
  struct Engine {
    int opcode = 0, index = 0, origin = 0, state = 0, busy = 0, stalled = 0;
  };

  int var(const char* leaf, std::uint32_t bits, std::string name, std::uint64_t initial) {
    const std::string declared = bits == 1 ? leaf : fmt::format("{} [{}:0]", leaf, bits - 1);
    const fstHandle h = fstWriterCreateVar(fst_, bits == 1 ? FST_VT_VCD_WIRE : FST_VT_VCD_REG, FST_VD_IMPLICIT, bits,
                                           declared.c_str(), 0);
    vars_.push_back({h, bits, std::move(name), initial});
    return static_cast<int>(vars_.size() - 1);
  }

  // Before the window nothing is written; the window opens with every
  // signal's value at that time.
  void open_at(std::uint64_t t) {
    if (opened_) return;
    opened_ = true;
    fstWriterEmitTimeChange(fst_, t);
    last_time_ = t;
    for (const Var& v : vars_) fstWriterEmitValueChange(fst_, v.handle, bits_of(v.value, v.bits).c_str());
  }

  void change(int index, std::uint64_t value) {
    Var& v = vars_[index];
    if (v.value == value) return;
    const std::uint64_t t = trace::now_ps();
    const bool write = fst_ && window_.contains(t);
    if (write) open_at(window_.from_ps);  // with the values from before this change
    v.value = value;
    v.ever_changed = true;
    if (!write) return;
    if (t != last_time_) {
      fstWriterEmitTimeChange(fst_, t);
      last_time_ = t;
    }
    fstWriterEmitValueChange(fst_, v.handle, bits_of(value, v.bits).c_str());
  }

  void* fst_ = nullptr;
  WaveWindow window_;
  bool opened_ = false;
  std::uint64_t last_time_ = 0;
  std::vector<Var> vars_;
  Engine engines_[arch::kNumEngines];
  WaveOrigins origins_;
  std::vector<int> sems_;
  std::vector<std::vector<int>> queues_;
  std::vector<std::array<int, 2>> traffic_;
};

// ---------------------------------------------------------------------------
// Merging parts: each part is read by its own thread (fstReaderIterBlocks
// calls back in time order for a whole file) into bounded batches; the main
// thread writes the batches' changes in global time order.

namespace {

struct Batch {
  std::vector<std::uint64_t> times;
  std::vector<fstHandle> handles;   // output handles
  std::vector<std::uint32_t> offsets;  // into bytes
  std::string bytes;
  std::size_t size() const { return times.size(); }
};

class PartReader {
public:
  PartReader(const WavePart& part, void* writer, std::vector<WaveSignal>& signals, std::uint64_t& enum_handles)
      : part_(part) {
    reader_ = fstReaderOpen(part.path.c_str());
    if (!reader_) throw std::runtime_error(fmt::format("waveform part {} cannot be read as FST", part.path));
    declare(writer, signals, enum_handles);
  }
  ~PartReader() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        abort_ = true;
      }
      cv_.notify_all();
      thread_.join();
    }
    if (reader_) fstReaderClose(reader_);
  }

  void start(const WaveWindow& window) {
    window_ = window;
    thread_ = std::thread([this] { produce(); });
  }

  // The next batch in time order; false at the end of the part.
  bool next(Batch& out) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !queue_.empty() || done_; });
    if (queue_.empty()) {
      if (!error_.empty()) throw std::runtime_error(error_);
      return false;
    }
    out = std::move(queue_.front());
    queue_.pop_front();
    cv_.notify_all();
    return true;
  }

  std::uint32_t value_bytes(fstHandle out) const { return value_len_.at(out); }

private:
  static constexpr std::size_t kBatch = 1 << 16;
  static constexpr std::size_t kQueued = 4;

  // Copies the part's hierarchy below `scope`, skipping the signals deeper
  // than the part's depth, and maps its handles to the output's.
  void declare(void* w, std::vector<WaveSignal>& signals, std::uint64_t& enum_handles) {
    std::vector<std::string> target;
    std::string rest = part_.scope;
    for (std::size_t p; (p = rest.find('.')) != std::string::npos; rest = rest.substr(p + 1))
      target.push_back(rest.substr(0, p));
    if (!rest.empty()) target.push_back(rest);
    for (const auto& s : target) fstWriterSetScope(w, FST_ST_VCD_MODULE, s.c_str(), nullptr);

    // Verilator puts the top ports in a scope "TOP" and again, with the
    // internals, in a scope named after the top module under it: the outer
    // copy is dropped, so the top module's scope is depth 1.
    std::vector<std::string> stack;  // part scopes open
    int written_depth = 0;           // scopes opened in the output for this part
    const fstHandle max = fstReaderGetMaxHandle(reader_);
    map_.assign(static_cast<std::size_t>(max) + 1, 0);
    fstReaderIterateHierRewind(reader_);
    bool pending_enum = false;
    std::uint64_t pending_enum_arg = 0;
    std::map<std::uint64_t, std::uint64_t> enum_map;
    while (fstHier* h = fstReaderIterateHier(reader_)) {
      switch (h->htyp) {
        case FST_HT_SCOPE: {
          stack.push_back(h->u.scope.name);
          if (kept_scope(stack.size())) {
            fstWriterSetScope(w, static_cast<fstScopeType>(h->u.scope.typ), h->u.scope.name, h->u.scope.component);
            ++written_depth;
          }
          break;
        }
        case FST_HT_UPSCOPE:
          if (kept_scope(stack.size())) {
            fstWriterSetUpscope(w);
            --written_depth;
          }
          stack.pop_back();
          break;
        case FST_HT_ATTRBEGIN:
          // Enum tables (definitions carry a name, references only the handle)
          // get handles of the output; other attributes are not needed.
          if (h->u.attr.typ == FST_AT_MISC && h->u.attr.subtype == FST_MT_ENUMTABLE) {
            if (h->u.attr.name_length > 0) {
              enum_map[h->u.attr.arg] = ++enum_handles;
              fstWriterSetAttrBegin(w, FST_AT_MISC, FST_MT_ENUMTABLE, h->u.attr.name, enum_handles);
            } else {
              pending_enum = true;
              pending_enum_arg = h->u.attr.arg;
            }
          }
          break;
        case FST_HT_ATTREND: break;
        case FST_HT_VAR: {
          const bool enum_ref = pending_enum;
          pending_enum = false;
          if (!kept_var(stack.size())) break;
          if (enum_ref && enum_map.count(pending_enum_arg))
            fstWriterSetAttrBegin(w, FST_AT_MISC, FST_MT_ENUMTABLE, nullptr, enum_map[pending_enum_arg]);
          const fstHandle in = h->u.var.handle;
          const bool real = h->u.var.typ == FST_VT_VCD_REAL || h->u.var.typ == FST_VT_VCD_REAL_PARAMETER ||
                            h->u.var.typ == FST_VT_VCD_REALTIME || h->u.var.typ == FST_VT_SV_SHORTREAL;
          const fstHandle alias = map_[in];
          const fstHandle out = fstWriterCreateVar(w, static_cast<fstVarType>(h->u.var.typ),
                                                   static_cast<fstVarDir>(h->u.var.direction), h->u.var.length,
                                                   h->u.var.name, alias);
          // FST names carry their range after a space ("cmd_k_i [15:0]").
          const std::string declared = h->u.var.name;
          const auto space = declared.find(' ');
          std::string full = part_.scope;
          for (std::size_t i = part_.verilated ? 1 : 0; i < stack.size(); ++i)
            full += (full.empty() ? "" : ".") + stack[i];
          signals.push_back({full + "." + declared.substr(0, space), h->u.var.length,
                             space == std::string::npos ? "" : declared.substr(space + 1)});
          if (!alias) {
            map_[in] = out;
            if (value_len_.size() <= out) value_len_.resize(out + 1, 0);
            value_len_[out] = real ? 8 : h->u.var.length;
          }
          break;
        }
        default: break;
      }
    }
    for (; written_depth > 0; --written_depth) fstWriterSetUpscope(w);
    for (std::size_t i = 0; i < target.size(); ++i) fstWriterSetUpscope(w);
  }

  // Verilated: stack depth 1 is "TOP"; 2 the top module (output depth 1), and so on.
  bool kept_scope(std::size_t depth) const {
    if (!part_.verilated) return true;
    if (depth < 2) return false;
    return part_.depth < 0 || static_cast<int>(depth) - 1 <= part_.depth;
  }
  bool kept_var(std::size_t depth) const { return kept_scope(depth); }

  void produce() {
    try {
      fstReaderSetFacProcessMaskAll(reader_);
      fstReaderIterBlocksSetNativeDoublesOnCallback(reader_, 1);
      fstReaderIterBlocks2(reader_, &PartReader::on_change, &PartReader::on_varlen, this, nullptr);
      flush();
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = e.what();
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

  static void on_change(void* self, std::uint64_t time, fstHandle in, const unsigned char* value) {
    auto* r = static_cast<PartReader*>(self);
    const fstHandle out = in < r->map_.size() ? r->map_[in] : 0;
    if (!out) return;
    r->add(time, out, value, r->value_len_[out]);
  }
  static void on_varlen(void* self, std::uint64_t time, fstHandle in, const unsigned char* value, std::uint32_t len) {
    auto* r = static_cast<PartReader*>(self);
    const fstHandle out = in < r->map_.size() ? r->map_[in] : 0;
    if (!out) return;
    r->add(time, out, value, len);
  }

  void add(std::uint64_t time, fstHandle out, const unsigned char* value, std::uint32_t len) {
    if (!window_.contains(time)) return;
    batch_.times.push_back(time);
    batch_.handles.push_back(out);
    batch_.offsets.push_back(static_cast<std::uint32_t>(batch_.bytes.size()));
    batch_.bytes.append(reinterpret_cast<const char*>(value), len);
    if (batch_.size() >= kBatch || batch_.bytes.size() >= (std::size_t{64} << 20)) flush();
  }

  void flush() {
    if (batch_.size() == 0) return;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return queue_.size() < kQueued || abort_; });
    if (abort_) throw std::runtime_error("merge stopped");
    queue_.push_back(std::move(batch_));
    batch_ = Batch{};
    cv_.notify_all();
  }

  WavePart part_;
  void* reader_ = nullptr;
  std::vector<fstHandle> map_;              // part handle -> output handle (0: dropped)
  std::vector<std::uint32_t> value_len_;    // output handle -> bytes of a value
  WaveWindow window_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  Batch batch_;
  bool done_ = false, abort_ = false;
  std::string error_;
};

}  // namespace

std::vector<WaveSignal> merge_waves(const std::vector<WavePart>& parts, const std::string& out,
                                    const WaveWindow& window) {
  void* w = fstWriterCreate(out.c_str(), 1);
  if (!w) throw std::runtime_error(fmt::format("cannot write the waveform {}", out));
  fstWriterSetTimescale(w, -12);
  fstWriterSetPackType(w, FST_WR_PT_LZ4);
  fstWriterSetVersion(w, "tessera");
  std::vector<WaveSignal> signals;
  try {
    std::uint64_t enum_handles = 0;
    std::vector<std::unique_ptr<PartReader>> readers;
    for (const WavePart& p : parts) readers.push_back(std::make_unique<PartReader>(p, w, signals, enum_handles));
    for (auto& r : readers) r->start(window);

    struct Cursor {
      PartReader* reader;
      Batch batch;
      std::size_t at = 0;
      bool live = true;
    };
    std::vector<Cursor> cursors;
    for (auto& r : readers) {
      Cursor c{r.get(), {}, 0, true};
      c.live = r->next(c.batch);
      cursors.push_back(std::move(c));
    }
    std::uint64_t last = 0;
    bool any = false;
    for (;;) {
      Cursor* best = nullptr;
      for (Cursor& c : cursors)
        if (c.live && (!best || c.batch.times[c.at] < best->batch.times[best->at])) best = &c;
      if (!best) break;
      // Everything of this part up to the next part's time goes out in one run.
      std::uint64_t limit = UINT64_MAX;
      for (Cursor& c : cursors)
        if (c.live && &c != best) limit = std::min(limit, c.batch.times[c.at]);
      Batch& b = best->batch;
      while (best->at < b.size() && b.times[best->at] <= limit) {
        const std::uint64_t t = b.times[best->at];
        if (!any || t != last) {
          fstWriterEmitTimeChange(w, t);
          last = t;
          any = true;
        }
        const fstHandle h = b.handles[best->at];
        const char* value = b.bytes.data() + b.offsets[best->at];
        const std::size_t end = best->at + 1 < b.size() ? b.offsets[best->at + 1] : b.bytes.size();
        if (end - b.offsets[best->at] == best->reader->value_bytes(h))
          fstWriterEmitValueChange(w, h, value);
        else
          fstWriterEmitVariableLengthValueChange(w, h, value, static_cast<std::uint32_t>(end - b.offsets[best->at]));
        ++best->at;
      }
      if (best->at == b.size()) {
        best->at = 0;
        best->live = best->reader->next(best->batch);
      }
    }
  } catch (...) {
    fstWriterClose(w);
    throw;
  }
  fstWriterClose(w);
  return signals;
}

// ---------------------------------------------------------------------------
// The save file.

namespace {

// GTKWave trace flags (gtkwave's TR_* bits as they appear after '@').
// A row with no radix (kEnum) lets GTKWave apply the signal's FST enum
// table, showing names instead of numbers.
constexpr unsigned kEnum = 0, kHex = 0x2, kDec = 0x4, kBin = 0x8, kRjustify = 0x20, kBlank = 0x200,
                   kAnalogStep = 0x8000, kGroupBegin = 0x800000, kGroupEnd = 0x1000000;

std::string gtkw_name(const WaveSignal& s) { return s.name + s.range; }

class Gtkw {
public:
  explicit Gtkw(std::ostream& os) : os_(os) {}
  // A group's marker line sets the current flags too: the next trace states its own.
  void begin(const std::string& name) {
    os_ << fmt::format("@{:x}\n-{}\n", kGroupBegin | kBlank, name);
    flags_ = 0;
  }
  void end(const std::string& name) {
    os_ << fmt::format("@{:x}\n-{}\n", kGroupEnd | kBlank, name);
    flags_ = 0;
  }
  // `alias`: the name GTKWave shows instead of the signal's own.
  void trace(const WaveSignal& s, unsigned flags, const std::string& alias = {}) {
    const unsigned f = (s.bits == 1 ? kBin : flags) | kRjustify;
    if (f != flags_) {
      os_ << fmt::format("@{:x}\n", f);
      flags_ = f;
    }
    if (!alias.empty()) os_ << "+{" << alias << "} ";
    os_ << gtkw_name(s) << '\n';
  }

private:
  std::ostream& os_;
  unsigned flags_ = 0;
};

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
std::string leaf(const std::string& s) { return s.substr(s.rfind('.') + 1); }
std::string parent(const std::string& s) { return s.substr(0, s.rfind('.')); }

}  // namespace

const std::vector<SaveFileGroup>& tensor_engine_save_file_groups() {
  static const std::vector<SaveFileGroup> groups = {
      {"Tensor engine control",
       {"clk_i", "rst_ni", "cmd_valid_i", "cmd_ready_o", "cmd_op_i", "cmd_k_i", "cmd_m_i", "cmd_n_i", "cmd_acc_i",
        "cmd_addr_i", "busy_o"},
       false},
      {"Array edges (stationary and moving operands in)",
       {"st_valid_i", "st_ready_o", "st_data_i", "mv_valid_i", "mv_ready_o", "mv_data_i"}},
      {"PSUM writes", {"ps_valid_o", "ps_ready_i", "ps_addr_o", "ps_acc_o", "ps_mask_o", "ps_data_o"}},
  };
  return groups;
}

// One group per engine in the save file; these are its channels, in order.
const std::vector<SaveFileGroup>& dma_engine_save_file_groups() {
  static const std::vector<SaveFileGroup> groups = {
      {"AR", {"arvalid_o", "arready_i", "arid_o", "araddr_o", "arlen_o"}},
      {"R", {"rvalid_i", "rready_o", "rid_i", "rlast_i", "rresp_i", "rdata_i"}},
      {"AW", {"awvalid_o", "awready_i", "awid_o", "awaddr_o", "awlen_o"}},
      {"W", {"wvalid_o", "wready_i", "wlast_o", "wstrb_o", "wdata_o"}},
      {"B", {"bvalid_i", "bready_o", "bid_i", "bresp_i"}},
      {"control", {"busy_o", "reg_req_i", "reg_we_i", "reg_addr_i", "reg_wdata_i"}},
  };
  return groups;
}

void write_gtkw(const std::string& fst, const std::string& gtkw, const std::vector<WaveSignal>& signals,
                const std::set<std::string>& shown, const WaveWindow& window) {
  std::ofstream os(gtkw);
  os << "[*] GTKWave save file written by tessera (docs/waves.md)\n";
  os << "[dumpfile] \"" << fs::absolute(fst).string() << "\"\n";
  os << "[savefile] \"" << fs::absolute(gtkw).string() << "\"\n";
  if (window.from_ps > 0) os << "[timestart] " << window.from_ps << '\n';
  if (window.to_ps != UINT64_MAX && window.to_ps > window.from_ps) {
    // Zoom so that the whole window fits the about 700 pixels of the wave
    // pane: GTKWave 3.3 draws 2^-(z + 7.64) time units per pixel at zoom z
    // (measured). No marker, no named markers.
    const double z = -std::log2(static_cast<double>(window.to_ps - window.from_ps) / 700.0) - 7.64;
    os << fmt::format("*{:.6f} -1", z);
    for (int i = 0; i < 26; ++i) os << " -1";
    os << '\n';
  }
  os << "[size] 1400 900\n[pos] 0 0\n";
  os << "[sst_width] 220\n[signals_width] 330\n[sst_expanded] 1\n[sst_vpaned_height] 200\n";
  Gtkw g(os);

  auto find = [&](const std::string& name) -> const WaveSignal* {
    for (const auto& s : signals)
      if (s.name == name) return &s;
    return nullptr;
  };
  auto tlm_shown = [&](const std::string& name) { return shown.count(name) > 0; };

  // Engine activity: every engine that ran more than its End (opcode and
  // state show as names through their enum tables).
  {
    bool opened = false;
    for (int e = 0; e < arch::kNumEngines; ++e) {
      const std::string name = engine_name(e), base = "tlm." + name;
      if (!tlm_shown(base + ".instr_index") && !tlm_shown(base + ".busy")) continue;
      if (!opened) g.begin("Engine activity");
      opened = true;
      if (auto* s = find(base + ".opcode")) g.trace(*s, kEnum, name + " opcode");
      if (auto* s = find(base + ".instr_index")) g.trace(*s, kDec, name + " instruction #");
      if (auto* s = find(base + ".origin")) g.trace(*s, kEnum, name + " call site, label");
      if (auto* s = find(base + ".state")) g.trace(*s, kEnum, name + " state");
      if (auto* s = find(base + ".busy")) g.trace(*s, kBin, name + " busy");
      if (auto* s = find(base + ".stalled")) g.trace(*s, kBin, name + " stalled");
    }
    if (opened) g.end("Engine activity");
  }

  // The tensor engine's RTL: its ports, by role. The top module's scope is
  // the one holding clk_i directly under rtl.tensor.
  std::string te;
  for (const auto& s : signals)
    if (starts_with(s.name, "rtl.tensor.") && leaf(s.name) == "clk_i" &&
        std::count(s.name.begin(), s.name.end(), '.') == 3) {
      te = parent(s.name);
      break;
    }
  auto group = [&](const std::string& title, const std::string& scope, const std::vector<std::string>& leaves,
                   unsigned flags) {
    std::vector<const WaveSignal*> found;
    for (const auto& l : leaves)
      if (auto* s = find(scope + "." + l)) found.push_back(s);
    if (found.empty()) return;
    g.begin(title);
    for (auto* s : found) g.trace(*s, flags);
    g.end(title);
  };
  if (!te.empty())
    for (const SaveFileGroup& sg : tensor_engine_save_file_groups()) group(sg.title, te, sg.ports, sg.hex ? kHex : kDec);

  // Each traced DMA engine's AXI channels.
  std::map<int, std::string> dma_tops;
  for (const auto& s : signals) {
    if (!starts_with(s.name, "rtl.dma") || leaf(s.name) != "clk_i" ||
        std::count(s.name.begin(), s.name.end(), '.') != 3)
      continue;
    const std::string scope = parent(s.name);
    dma_tops[std::stoi(scope.substr(7, scope.find('.', 4) - 7))] = scope;
  }
  for (const auto& [e, scope] : dma_tops) {
    const std::string title = fmt::format("DMA engine {} AXI", e);
    g.begin(title);
    for (const SaveFileGroup& channel : dma_engine_save_file_groups())
      for (const auto& l : channel.ports)
        if (auto* s = find(scope + "." + l)) g.trace(*s, channel.hex ? kHex : kDec);
    g.end(title);
  }

  // Transaction-level state that moved: semaphores, DMA queues, traffic.
  // Rows named "<alias prefix> <leaf>".
  auto tlm_group = [&](const std::string& title, const std::string& prefix, const std::string& alias,
                       unsigned flags) {
    std::vector<const WaveSignal*> found;
    for (const auto& s : signals)
      if (starts_with(s.name, prefix) && tlm_shown(s.name)) found.push_back(&s);
    if (found.empty()) return;
    g.begin(title);
    for (auto* s : found) g.trace(*s, flags, alias + leaf(s->name));
    g.end(title);
  };
  tlm_group("Semaphores", "tlm.semaphores.", "", kDec);
  std::set<int> dma_engines;
  for (const auto& s : signals)
    if (starts_with(s.name, "tlm.dma")) dma_engines.insert(std::stoi(s.name.substr(7)));
  for (int e : dma_engines)
    tlm_group(fmt::format("DMA engine {} queue depths", e), fmt::format("tlm.dma{}.", e), fmt::format("dma{} ", e),
              kDec);
  tlm_group("SBUF traffic (bytes)", "tlm.sbuf.", "sbuf ", kDec | kAnalogStep);
  tlm_group("PSUM traffic (bytes)", "tlm.psum.", "psum ", kDec | kAnalogStep);
  if (!os) throw std::runtime_error(fmt::format("cannot write {}", gtkw));
}

// ---------------------------------------------------------------------------

WaveRecorder::WaveRecorder(WaveOptions options, const arch::HwConfig& cfg, WaveOrigins origins)
    : options_(std::move(options)) {
  const fs::path fst(options_.path);
  if (fst.has_parent_path()) fs::create_directories(fst.parent_path());
  parts_dir_ = options_.path + ".parts";
  fs::remove_all(parts_dir_);
  fs::create_directories(parts_dir_);
  if (options_.scope.tlm)
    tlm_ = std::make_unique<TlmPart>(parts_dir_ + "/tlm.fst", cfg, options_.window, std::move(origins));
}

WaveRecorder::~WaveRecorder() {
  tlm_.reset();
  std::error_code ec;
  fs::remove_all(parts_dir_, ec);
}

void WaveRecorder::engine_instruction(int engine, std::uint64_t index, std::uint8_t opcode) {
  if (tlm_) tlm_->instruction(engine, index, opcode);
}
void WaveRecorder::engine_state(int engine, EngineState state) {
  if (tlm_) tlm_->state(engine, state);
}
void WaveRecorder::semaphore(std::size_t index, std::uint32_t value) {
  if (tlm_) tlm_->semaphore(index, value);
}
void WaveRecorder::dma_queue_depth(std::uint32_t engine, std::uint32_t queue, std::uint32_t depth) {
  if (tlm_) tlm_->queue(engine, queue, depth);
}
void WaveRecorder::memory_traffic(Memory memory, bool write, std::uint64_t bytes) {
  if (tlm_) tlm_->traffic(memory, write, bytes);
}

std::optional<trace::WaveProbe::RtlTrace> WaveRecorder::rtl_trace(const std::string& block) {
  int depth = 0;
  if (block == "tensor") {
    depth = options_.scope.tensor_depth;
  } else if (block.rfind("dma", 0) == 0) {
    const auto e = static_cast<std::uint32_t>(std::stoul(block.substr(3)));
    if (options_.scope.dma.empty() || options_.scope.dma.count(e)) depth = options_.scope.dma_depth;
  }
  if (depth == 0) return std::nullopt;
  const std::string path = parts_dir_ + "/" + block + ".fst";
  rtl_parts_.push_back({path, "rtl." + block, depth});
  return RtlTrace{path, options_.window.from_ps, options_.window.to_ps};
}

WaveRecorder::Result WaveRecorder::finish(std::uint64_t end_ps) {
  std::vector<WavePart> parts;
  std::set<std::string> shown;
  if (tlm_) {
    tlm_->close(end_ps);
    shown = tlm_->changed();
    parts.push_back({parts_dir_ + "/tlm.fst", "", -1, false});
  }
  for (const WavePart& p : rtl_parts_)
    if (fs::exists(p.path)) parts.push_back(p);
  Result r;
  r.fst = options_.path;
  r.gtkw = fs::path(options_.path).replace_extension(".gtkw").string();
  const auto signals = merge_waves(parts, r.fst, options_.window);
  write_gtkw(r.fst, r.gtkw, signals, shown, {options_.window.from_ps, std::min(options_.window.to_ps, end_ps)});
  r.signals = signals.size();
  tlm_.reset();
  std::error_code ec;
  fs::remove_all(parts_dir_, ec);
  return r;
}

}  // namespace tessera::cosim
