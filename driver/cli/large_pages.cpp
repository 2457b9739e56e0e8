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
#include "sanitized_allocator.h"

#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if !defined(TESSERA_SANITIZED_ALLOCATOR)
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// Blocks under the builder's threshold (kLargeArrayBytes) keep the default
// pages: a huge page only pays for itself when most of it is used. Larger
// ones are whole huge pages: aligned to 2 MiB and a multiple of it, so that
// no 4 KiB page is left at either end. From kLargeArrayBytes up glibc maps
// each afresh (the threshold below), so no huge page ever lies in the heap.
void* allocate(std::size_t bytes) {
  for (;;) {
    const bool large = bytes >= tessera::builder::kLargeArrayBytes;
    const std::size_t whole = (bytes + kHugePage - 1) & ~(kHugePage - 1);
    void* p = large ? std::aligned_alloc(kHugePage, whole) : std::malloc(bytes == 0 ? 1 : bytes);
    if (p) {
      if (large) tessera::builder::prefer_huge_pages(p, whole);
      return p;
    }
    const std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

// glibc maps a block of at least its mmap threshold afresh and unmaps it
// when freed, and serves smaller ones from its heap, reusing what is freed.
// By default it also raises that threshold, up to 32 MiB, each time such a
// block is freed, so which of a run's blocks were mapped afresh depended on
// the order earlier blocks happened to be freed in. The threshold is fixed
// at kLargeArrayBytes, the size from which blocks are huge pages: with it at
// 32 MiB, blocks of 4 to 32 MiB came from the heap advised huge, and once
// freed their huge pages stayed in the heap under small blocks, so the peak
// resident memory of the 4096x8192x8192 GEMM was 280 or 305 MiB depending on
// where the heap's blocks happened to fall (the size of the environment
// was enough to move them). Fixed at 4 MiB it is 275 MiB either way.
// The blocks under 4 MiB now fault in 4 KiB pages where they had often
// landed on those huge pages (34 k page faults against 21 k), for the same
// CPU time within the host's noise (docs/performance.md). 4 MiB is within glibc's range on
// 64-bit hosts; elsewhere mallopt refuses it and the default stays.
//
// The heap keeps up to as much free memory at its top, where glibc would
// hand back all but 128 KiB to the kernel at each free: blocks of a few
// hundred KiB freed and allocated again in turn (the report's per-queue
// tables) then faulted their pages in afresh each time, and how often
// depended on where they happened to lie (8,600 more page faults on the
// 4096x8192x8192 GEMM after an unrelated change moved them).
struct MmapThreshold {
  MmapThreshold() {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(tessera::builder::kLargeArrayBytes));
    mallopt(M_TRIM_THRESHOLD, static_cast<int>(tessera::builder::kLargeArrayBytes));
#endif
  }
} const fixed_mmap_threshold;

}  // namespace

void* operator new(std::size_t bytes) { return allocate(bytes); }
void* operator new[](std::size_t bytes) { return allocate(bytes); }
#endif
