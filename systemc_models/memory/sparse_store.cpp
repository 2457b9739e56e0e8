#include "memory/sparse_store.h"

#include <algorithm>
#include <cstring>

namespace tessera::memory {

void SparseStore::read(std::uint64_t address, std::uint8_t* out, std::uint64_t length) const {
  while (length > 0) {
    const std::uint64_t page = address / kPageBytes, offset = address % kPageBytes;
    const std::uint64_t n = std::min(length, kPageBytes - offset);
    const auto it = pages_.find(page);
    if (it == pages_.end()) std::memset(out, 0, n);  // never written: reads as zero
    else std::memcpy(out, it->second.get() + offset, n);
    address += n;
    out += n;
    length -= n;
  }
}

void SparseStore::write(std::uint64_t address, const std::uint8_t* in, std::uint64_t length) {
  while (length > 0) {
    const std::uint64_t page = address / kPageBytes, offset = address % kPageBytes;
    const std::uint64_t n = std::min(length, kPageBytes - offset);
    auto& p = pages_[page];
    if (!p) p = std::make_unique<std::uint8_t[]>(kPageBytes);  // value-initialised: zeros
    std::memcpy(p.get() + offset, in, n);
    address += n;
    in += n;
    length -= n;
  }
}

}  // namespace tessera::memory
