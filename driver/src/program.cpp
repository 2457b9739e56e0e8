#include "tessera/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tessera {

arch::Instruction InstructionStream::operator[](std::size_t i) const {
  std::size_t pos = begins_[i];
  return arch::decode(bytes_, pos);
}

arch::HeaderFields InstructionStream::header(std::size_t i) const {
  if (begins_[i] + arch::kInstrHeaderBytes > bytes_.size()) (void)(*this)[i];  // throws arch::IsaError
  return arch::header_fields(bytes_.data() + begins_[i]);
}

namespace {

// begins_ holds 32-bit offsets.
void check_fits(std::size_t bytes, std::size_t instructions) {
  if (bytes > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error(fmt::format("an instruction stream of over 4 GiB ({} instructions)", instructions));
}

}  // namespace

InstructionStream::InstructionStream(std::vector<std::uint8_t> bytes, std::vector<std::uint32_t> begins)
    : bytes_(std::move(bytes)), begins_(std::move(begins)) {
  std::size_t at = 0;
  for (std::size_t i = 0; i < begins_.size(); ++i) {
    if (begins_[i] != at)
      throw std::invalid_argument(fmt::format(
          "instruction stream: instruction {} begins at byte {}, not {} where the one before it ends", i, begins_[i], at));
    if (at + arch::kInstrHeaderBytes > bytes_.size())
      throw std::invalid_argument(fmt::format("instruction stream: instruction {} at byte {} runs past its end ({} bytes)",
                                              i, at, bytes_.size()));
    const std::size_t length = arch::encoded_length(bytes_.data() + at);
    if (length < arch::kInstrHeaderBytes)
      throw std::invalid_argument(
          fmt::format("instruction stream: instruction {} at byte {} says it is {} bytes long", i, at, length));
    at += length;
  }
  if (at != bytes_.size())
    throw std::invalid_argument(fmt::format("instruction stream: its {} instructions end at byte {}, not at its end {}",
                                            begins_.size(), at, bytes_.size()));
}

void InstructionStream::push_back(const arch::Instruction& in) {
  check_fits(bytes_.size() + arch::encoded_size(in), size() + 1);
  begins_.push_back(static_cast<std::uint32_t>(bytes_.size()));
  arch::encode_append(in, bytes_);
}

void InstructionStream::set(std::size_t i, const arch::Instruction& in) {
  const std::vector<std::uint8_t> now = arch::encode(in);
  const std::size_t at = begins_[i], was = (i + 1 < size() ? begins_[i + 1] : bytes_.size()) - at;
  if (now.size() != was) {
    check_fits(bytes_.size() - was + now.size(), size());
    const auto grow = static_cast<std::int64_t>(now.size()) - static_cast<std::int64_t>(was);
    bytes_.erase(bytes_.begin() + static_cast<std::ptrdiff_t>(at), bytes_.begin() + static_cast<std::ptrdiff_t>(at + was));
    bytes_.insert(bytes_.begin() + static_cast<std::ptrdiff_t>(at), now.size(), 0);
    for (std::size_t k = i + 1; k < size(); ++k) begins_[k] = static_cast<std::uint32_t>(begins_[k] + grow);
  }
  std::copy(now.begin(), now.end(), bytes_.begin() + static_cast<std::ptrdiff_t>(at));
}

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

std::vector<std::uint8_t> Program::encode(arch::Engine e) const { return streams.at(static_cast<std::size_t>(e)).bytes(); }

std::string Program::disassemble() const {
  std::string out = fmt::format("program '{}': {} instructions, {} DMA queues\n", name, instruction_count(), rings.size());
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const auto& s = streams[e];
    out += fmt::format("\n[{}] {} instructions\n", to_string(static_cast<arch::Engine>(e)), s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::string where = origin(static_cast<arch::Engine>(e), i);
      std::string text;
      try {
        text = arch::disassemble(s[i]);
      } catch (const arch::IsaError& e) {  // a program made by hand
        text = fmt::format("(cannot be decoded: {})", e.what());
      }
      out += fmt::format("{:6}  {}{}{}\n", i, text, where.empty() ? "" : "  ; ", where);
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
