#include "heap_pages.h"
#include "sanitized_allocator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <fcntl.h>
#include <sys/auxv.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

// Whether this build starts again at all (huge_page_heap_built()).
#if defined(__GLIBC__) && !defined(TESSERA_SANITIZED_ALLOCATOR)
#define TESSERA_HUGE_PAGE_HEAP 1
#endif

namespace tessera::cli {

namespace {

constexpr const char* kTunable = "glibc.malloc.hugetlb";

// glibc's version as "major.minor" at least 2.35, the first with the tunable.
bool has_tunable(const char* version) {
  if (!version) return false;
  int major = 0, minor = 0;
  if (std::sscanf(version, "%d.%d", &major, &minor) != 2) return false;
  return major > 2 || (major == 2 && minor >= 35);
}

}  // namespace

bool huge_page_heap_built() {
#if defined(TESSERA_HUGE_PAGE_HEAP)
  return true;
#else
  return false;
#endif
}

std::string huge_page_heap_tunables(const HeapPagesContext& context) {
  if (context.started_again || context.secure || context.through_loader) return {};
  if (context.glibc_tunables && std::strstr(context.glibc_tunables, kTunable)) return {};
  // "always" and "madvise" both honour the advice; the setting marks the current choice.
  if (context.thp_enabled.find("[always]") == std::string::npos &&
      context.thp_enabled.find("[madvise]") == std::string::npos)
    return {};
  if (!has_tunable(context.glibc_version)) return {};
  if (context.ld_preload && std::strstr(context.ld_preload, "vgpreload")) return {};
  const std::string mine = std::string(kTunable) + "=1";
  if (!context.glibc_tunables || !*context.glibc_tunables) return mine;
  return std::string(context.glibc_tunables) + ":" + mine;
}

HeapPagesContext heap_pages_context(char** envp) {
  // From envp, not getenv(): before libc's own initialiser has run (from
  // .preinit_array) getenv() does not see the environment yet.
  const auto value_of = [&](const char* name) -> const char* {
    const std::size_t n = std::strlen(name);
    for (char** e = envp; e && *e; ++e)
      if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return nullptr;
  };
  HeapPagesContext context;
  context.started_again = value_of(kHugePageHeapMarker) != nullptr;
  context.glibc_tunables = value_of("GLIBC_TUNABLES");
  context.ld_preload = value_of("LD_PRELOAD");
#if defined(__GLIBC__)
  context.glibc_version = gnu_get_libc_version();
  context.secure = getauxval(AT_SECURE) != 0;
  context.through_loader = getauxval(AT_BASE) == 0;
#endif
  // With read(2), not a stream: this runs before the C++ library's own static initialisers.
  if (const int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC); fd >= 0) {
    char text[128];
    const ssize_t n = read(fd, text, sizeof text);
    if (n > 0) context.thp_enabled.assign(text, static_cast<std::size_t>(n));
    close(fd);
  }
  return context;
}

void restart_with_huge_page_heap(char** argv, char** envp) {
#if defined(TESSERA_HUGE_PAGE_HEAP)
  const std::string tunables = huge_page_heap_tunables(heap_pages_context(envp));
  if (tunables.empty()) return;
  // The same environment with GLIBC_TUNABLES set (in its place, or last) and the marker.
  const std::string assignment = "GLIBC_TUNABLES=" + tunables;
  const std::string marker = std::string(kHugePageHeapMarker) + "=restarted";
  std::vector<char*> env;
  bool replaced = false;
  for (char** e = envp; e && *e; ++e) {
    const bool tunables_var = std::strncmp(*e, "GLIBC_TUNABLES=", 15) == 0;
    env.push_back(tunables_var ? const_cast<char*>(assignment.c_str()) : *e);
    replaced |= tunables_var;
  }
  if (!replaced) env.push_back(const_cast<char*>(assignment.c_str()));
  env.push_back(const_cast<char*>(marker.c_str()));
  env.push_back(nullptr);
  // By its path, so that the process keeps its name (the kernel names it
  // after the file executed: "exe" for /proc/self/exe); through /proc/self/exe
  // if that fails (the file replaced since, say).
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    execve(self, argv, env.data());
  }
  execve("/proc/self/exe", argv, env.data());
  // The exec failed (no /proc, say): run on with the default pages.
#else
  (void)argv;
  (void)envp;
#endif
}

}  // namespace tessera::cli
