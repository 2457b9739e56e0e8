#include "heap_counter.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace tessera::bench {
namespace {

// Relaxed: the figures are read between measured sections, after any
// thread that allocated in them has joined.
std::atomic<std::int64_t> live_bytes{0};
std::atomic<std::int64_t> peak_bytes{0};
std::atomic<std::uint64_t> allocation_count{0};

void* counted_alloc(std::size_t n, std::size_t align) {
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n == 0 ? 1 : n);
  if (!p) throw std::bad_alloc();
  const auto size = static_cast<std::int64_t>(malloc_usable_size(p));
  const std::int64_t now = live_bytes.fetch_add(size, std::memory_order_relaxed) + size;
  std::int64_t peak = peak_bytes.load(std::memory_order_relaxed);
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  allocation_count.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void counted_free(void* p) {
  if (!p) return;
  live_bytes.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

std::int64_t HeapCounter::live() { return live_bytes.load(std::memory_order_relaxed); }
std::int64_t HeapCounter::peak() { return peak_bytes.load(std::memory_order_relaxed); }
std::uint64_t HeapCounter::allocations() { return allocation_count.load(std::memory_order_relaxed); }
void HeapCounter::reset_peak() { peak_bytes.store(live(), std::memory_order_relaxed); }

}  // namespace tessera::bench

// Every form of the global operator new and delete, so that no allocation of
// the measured code escapes the count.
void* operator new(std::size_t n) { return tessera::bench::counted_alloc(n, 0); }
void* operator new[](std::size_t n) { return tessera::bench::counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return tessera::bench::counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return tessera::bench::counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return tessera::bench::counted_alloc(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return tessera::bench::counted_alloc(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { tessera::bench::counted_free(p); }
void operator delete[](void* p) noexcept { tessera::bench::counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { tessera::bench::counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { tessera::bench::counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { tessera::bench::counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { tessera::bench::counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { tessera::bench::counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { tessera::bench::counted_free(p); }
