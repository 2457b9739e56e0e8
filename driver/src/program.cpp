#include "tessera/program.h"

#include <fmt/format.h>

namespace tessera {

std::size_t Program::instruction_count() const {
  std::size_t n = 0;
  for (const auto& s : streams) n += s.size();
  return n;
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
    for (std::size_t i = 0; i < s.size(); ++i) out += fmt::format("{:6}  {}\n", i, arch::disassemble(s[i]));
  }
  for (const auto& [q, ring] : rings) {
    out += fmt::format("\n[dma{}.q{}] {} descriptors\n", q.first, q.second, ring.size());
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const auto& d = ring[i];
      out += fmt::format("{:6}  0x{:x} ({}) -> 0x{:x} ({}) elem {} B{}{} sem 0x{:x} += {}\n", i, d.src_addr,
                         fmt::join(d.src_size, "x"), d.dst_addr, fmt::join(d.dst_size, "x"), 1u << d.elem_log2,
                         (d.flags & arch::kDmaFlagBarrier) ? " barrier" : "",
                         (d.flags & arch::kDmaFlagLast) ? " last" : "", d.sem_addr, d.sem_value);
    }
  }
  return out;
}

}  // namespace tessera
