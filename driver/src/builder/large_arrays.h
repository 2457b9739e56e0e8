// The arrays of a large kernel (its instructions, descriptors, ops and their
// waits) run to hundreds of MiB, each written once from start to end. In
// 4 KiB pages every 4 KiB of them costs the kernel a page fault, and on a
// virtual machine those faults were over half of building a large program
// (docs/performance.md, "Building programs"). So these arrays ask for
// transparent huge pages (madvise MADV_HUGEPAGE, the only way to get them
// where THP is set to "madvise", as on Debian) before anything touches
// their memory: 2 MiB per fault. Elsewhere the advice does nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera::builder {

// Arrays smaller than this keep the default pages.
inline constexpr std::size_t kLargeArrayBytes = std::size_t{4} << 20;

// Advises huge pages for the whole pages of [data, data + bytes).
inline void prefer_huge_pages(const void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes < kLargeArrayBytes) return;
  constexpr std::uintptr_t kPage = 4096;
  const auto at = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t begin = (at + kPage - 1) & ~(kPage - 1), end = (at + bytes) & ~(kPage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

// v.reserve(n), with a large new block advised before the elements move in.
template <typename T>
void reserve_large(std::vector<T>& v, std::size_t n) {
  if (n <= v.capacity()) return;
  if (n * sizeof(T) < kLargeArrayBytes) {
    v.reserve(n);
    return;
  }
  std::vector<T> bigger;
  bigger.reserve(n);
  prefer_huge_pages(bigger.data(), n * sizeof(T));
  bigger.insert(bigger.end(), v.begin(), v.end());
  v.swap(bigger);
}

// v.push_back(x), growing as std::vector does (twice the capacity) through reserve_large.
template <typename T>
void push_large(std::vector<T>& v, const T& x) {
  if (v.size() == v.capacity()) reserve_large(v, std::max<std::size_t>(16, 2 * v.capacity()));
  v.push_back(x);
}

}  // namespace tessera::builder
