// Transparent huge pages for the `tessera` process's heap.
//
// glibc serves every block under its mmap threshold (4 MiB, large_pages.cpp)
// from its heap, in 4 KiB pages unless told otherwise: the 4096x8192x8192
// GEMM faulted in 28,600 of them, and a fault on a virtual machine costs
// microseconds. glibc's tunable glibc.malloc.hugetlb=1 advises the heap as it
// grows, aligned so that each 2 MiB range of it can be one huge page: 2,000
// faults, and 12-14 % less CPU for that run (docs/performance.md, "The heap
// in huge pages"). glibc reads tunables only as a process starts, from
// GLIBC_TUNABLES, so `tessera` starts itself again with it set, once, before
// anything else (about 12 ms of CPU); the processes it starts inherit it. Setting GLIBC_TUNABLES
// to name glibc.malloc.hugetlb (=0 for the default pages) keeps it from doing so.
#pragma once

#include <string>

namespace tessera::cli {

// What the choice depends on: GLIBC_TUNABLES and LD_PRELOAD as the process
// has them (null when unset), the kernel's THP setting
// (/sys/kernel/mm/transparent_hugepage/enabled, empty if unreadable),
// glibc's version (gnu_get_libc_version(), null if not glibc), whether this
// process was started again already (TESSERA_HUGE_PAGE_HEAP in its
// environment), runs in secure mode (setuid or capabilities: AT_SECURE,
// where glibc drops tunables) and was started through the dynamic loader
// itself (`ld-linux-x86-64.so.2 ./tessera ...`, no AT_BASE: /proc/self/exe
// is the loader, and the arguments it took are gone).
struct HeapPagesContext {
  const char* glibc_tunables = nullptr;
  const char* ld_preload = nullptr;
  std::string thp_enabled;
  const char* glibc_version = nullptr;
  bool started_again = false;
  bool secure = false;
  bool through_loader = false;
};

// The marker of a process started again: whatever becomes of
// GLIBC_TUNABLES on the way, a process starts again at most once.
inline constexpr const char* kHugePageHeapMarker = "TESSERA_HUGE_PAGE_HEAP";

// The GLIBC_TUNABLES value to start again with, or empty to run on as it is:
// when the process was started again already, the tunable is named already
// (by the user), THP is off ("[never]") or unknown, glibc predates the
// tunable (2.35), the process runs under valgrind (which would not follow
// the new start), in secure mode or through the loader.
std::string huge_page_heap_tunables(const HeapPagesContext& context);

// This process's context: from its environment `envp` (getenv() is not
// ready in .preinit_array), its auxiliary vector, glibc and /sys.
HeapPagesContext heap_pages_context(char** envp);

// Whether this build starts again at all: not with a sanitizer's allocator,
// which the tunable does not reach, nor off glibc.
bool huge_page_heap_built();

// Starts the process again (execve of its own file, same arguments and
// environment but GLIBC_TUNABLES and the marker, same pid) when
// huge_page_heap_tunables() says so for the environment `envp`;
// returns if it does not, or if the exec fails. Safe to call before any
// static initialiser has run, as `tessera` does (main.cpp), so that the
// first start costs little more than the dynamic loader's work.
void restart_with_huge_page_heap(char** argv, char** envp);

}  // namespace tessera::cli
