#include "tessera/program.h"

#include <fmt/format.h>

namespace tessera {

std::size_t Program::instruction_count() const {
  std::size_t n = 0;
  for (const auto& s : streams) n += s.size();
  return n;
}

std::string Program::site_name(const CallSite& site) const {
  if (site.file < 0 || static_cast<std::size_t>(site.file) >= source_files.size()) return {};
  return fmt::format("{}:{}", source_files[static_cast<std::size_t>(site.file)], site.line);
}

namespace {

std::string origin_of(const std::string& site, const std::string& label) {
  std::string out;
  if (!site.empty()) out = "at " + site;
  if (!label.empty()) out += fmt::format("{}label '{}'", out.empty() ? "" : ", ", label);
  return out;
}

template <typename T>
const T* at(const std::vector<T>& v, std::size_t i) {
  return i < v.size() ? &v[i] : nullptr;
}

}  // namespace

const std::string& Program::label(arch::Engine e, std::size_t index) const {
  const auto engine = static_cast<std::size_t>(e);
  return label(engine < labels.size() ? &labels[engine] : nullptr, index);
}

const std::string& Program::label(DmaQueueId queue, std::size_t index) const {
  const auto l = ring_labels.find(queue);
  return label(l == ring_labels.end() ? nullptr : &l->second, index);
}

const std::string& Program::label(const std::vector<std::uint32_t>* ids, std::size_t index) const {
  const std::uint32_t* id = ids ? at(*ids, index) : nullptr;
  return id && *id < label_names.size() ? label_names[*id] : label_names.front();
}

std::string Program::origin(arch::Engine e, std::size_t index) const {
  const auto engine = static_cast<std::size_t>(e);
  const CallSite* site = engine < sites.size() ? at(sites[engine], index) : nullptr;
  return origin_of(site ? site_name(*site) : std::string(), label(e, index));
}

std::string Program::origin(DmaQueueId queue, std::size_t index) const {
  const auto s = ring_sites.find(queue);
  const CallSite* site = s == ring_sites.end() ? nullptr : at(s->second, index);
  return origin_of(site ? site_name(*site) : std::string(), label(queue, index));
}

std::vector<std::uint8_t> Program::encode(arch::Engine e) const {
  std::vector<std::uint8_t> out;
  for (const auto& in : streams.at(static_cast<std::size_t>(e))) {
    const auto bytes = arch::encode(in);
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  return out;
}

std::string Program::disassemble() const {
  std::string out = fmt::format("program '{}': {} instructions, {} DMA queues\n", name, instruction_count(), rings.size());
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const auto& s = streams[e];
    out += fmt::format("\n[{}] {} instructions\n", to_string(static_cast<arch::Engine>(e)), s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::string where = origin(static_cast<arch::Engine>(e), i);
      out += fmt::format("{:6}  {}{}{}\n", i, arch::disassemble(s[i]), where.empty() ? "" : "  ; ", where);
    }
  }
  for (const auto& [q, ring] : rings) {
    out += fmt::format("\n[dma{}.q{}] {} descriptors\n", q.first, q.second, ring.size());
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const auto& d = ring[i];
      const std::string where = origin(q, i);
      out += fmt::format("{:6}  0x{:x} ({}) -> 0x{:x} ({}) elem {} B{}{} sem 0x{:x} += {}{}{}\n", i, d.src_addr,
                         fmt::join(d.src_size, "x"), d.dst_addr, fmt::join(d.dst_size, "x"), 1u << d.elem_log2,
                         (d.flags & arch::kDmaFlagBarrier) ? " barrier" : "",
                         (d.flags & arch::kDmaFlagLast) ? " last" : "", d.sem_addr, d.sem_value,
                         where.empty() ? "" : "  ; ", where);
    }
  }
  return out;
}

}  // namespace tessera
