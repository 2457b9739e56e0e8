#include "memory/sparse_store.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera::memory {

namespace {
constexpr std::size_t kSlabBytes = SparseStore::kPageBytes * SparseStore::kSlabPages;
}  // namespace

#if defined(__linux__)
// Fresh anonymous memory: zero already, so the only zeroing is the kernel's
// as a page is first written. Mapped twice the size and trimmed to a slab
// aligned to its own size, which the kernel can back with one huge page.
std::uint8_t* SparseStore::map_slab() {
  const std::size_t span = 2 * kSlabBytes;
  void* m = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(m);
  const std::uintptr_t slab = (base + kSlabBytes - 1) & ~std::uintptr_t{kSlabBytes - 1};
  if (slab > base) munmap(m, slab - base);
  if (base + span > slab + kSlabBytes) munmap(reinterpret_cast<void*>(slab + kSlabBytes), base + span - slab - kSlabBytes);
#if defined(MADV_HUGEPAGE)
  madvise(reinterpret_cast<void*>(slab), kSlabBytes, MADV_HUGEPAGE);
#endif
  return reinterpret_cast<std::uint8_t*>(slab);
}

void SparseStore::FreeSlab::operator()(std::uint8_t* p) const { munmap(p, kSlabBytes); }
#else
std::uint8_t* SparseStore::map_slab() {
  auto* slab = static_cast<std::uint8_t*>(std::calloc(1, kSlabBytes));
  if (!slab) throw std::bad_alloc();
  return slab;
}

void SparseStore::FreeSlab::operator()(std::uint8_t* p) const { std::free(p); }
#endif

void SparseStore::clear() {
  pages_ = {};
  slabs_.clear();
  slab_used_ = kSlabPages;
}

std::uint8_t* SparseStore::new_page() {
  if (slab_used_ == kSlabPages) {
    slabs_.emplace_back(map_slab());
    slab_used_ = 0;
  }
  return slabs_.back().get() + kPageBytes * slab_used_++;
}

void SparseStore::read(std::uint64_t address, std::uint8_t* out, std::uint64_t length) const {
  while (length > 0) {
    const std::uint64_t page = address / kPageBytes, offset = address % kPageBytes;
    const std::uint64_t n = std::min(length, kPageBytes - offset);
    const auto it = pages_.find(page);
    if (it == pages_.end()) std::memset(out, 0, n);  // never written: reads as zero
    else std::memcpy(out, it->second + offset, n);
    address += n;
    out += n;
    length -= n;
  }
}

void SparseStore::write(std::uint64_t address, const std::uint8_t* in, std::uint64_t length) {
  while (length > 0) {
    const std::uint64_t page = address / kPageBytes, offset = address % kPageBytes;
    const std::uint64_t n = std::min(length, kPageBytes - offset);
    std::uint8_t*& p = pages_[page];
    if (!p) p = new_page();
    std::memcpy(p + offset, in, n);
    address += n;
    in += n;
    length -= n;
  }
}

}  // namespace tessera::memory
