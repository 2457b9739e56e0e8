// Transparent huge pages for every large block the `tessera` process
// allocates, and a fixed line between the blocks glibc maps afresh and
// those it serves from memory the process already holds.
//
// A large run's arrays (the program, the engines' records of what they did,
// the critical path's events) run to hundreds of MiB, each written from
// start to end soon after it is allocated. In 4 KiB pages every 4 KiB costs
// a page fault, and on a virtual machine like the CI's those faults were a
// fifth of the CPU time of the 4096x8192x8192 GEMM (docs/performance.md,
// "The report, the loader and the process's pages"). The builder already
// advised its own arrays (builder/large_arrays.h, whose advice this calls);
// replacing the global
// allocation function extends that to every large std::vector and buffer of
// the simulation and its report, without touching the code that owns them.
//
// The advice (madvise MADV_HUGEPAGE) is what glibc's own
// `glibc.malloc.hugetlb=1` tunable does, but a tunable must be in the
// environment before the process starts. Where THP is "never" it does
// nothing. Blocks come from malloc as before, so the standard operator
// delete (free) still releases them. Sanitizer builds keep their own
// allocation functions.
#include "builder/large_arrays.h"

#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define TESSERA_SANITIZED_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TESSERA_SANITIZED_ALLOCATOR 1
#endif

#if !defined(TESSERA_SANITIZED_ALLOCATOR)
namespace {

// Blocks under the builder's threshold (kLargeArrayBytes) keep the default
// pages: a huge page only pays for itself when most of it is used.
void* allocate(std::size_t bytes) {
  for (;;) {
    if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) {
      tessera::builder::prefer_huge_pages(p, bytes);
      return p;
    }
    const std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

// glibc maps a block of at least its mmap threshold afresh (a page fault
// per 4 KiB page as it is first written, unless it is advised huge) and
// unmaps it when freed; and it raises that threshold, up to 32 MiB, each time
// such a block is freed. So which of a run's blocks of a few MiB were
// faulted in anew and which reused freed memory depended on the order
// earlier blocks happened to be freed in: reserving one log instead of
// letting it double cost the 4096x8192x8192 GEMM 2,000 more page faults.
// Fixed at the top of that range, blocks under 32 MiB come from the heap
// and reuse what is freed: that GEMM's page faults 39 k -> 28 k
// (docs/performance.md). 32 MiB is within glibc's range on 64-bit hosts
// only; elsewhere mallopt refuses it and the default stays.
struct MmapThreshold {
  MmapThreshold() {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
  }
} const fixed_mmap_threshold;

}  // namespace

void* operator new(std::size_t bytes) { return allocate(bytes); }
void* operator new[](std::size_t bytes) { return allocate(bytes); }
#endif
