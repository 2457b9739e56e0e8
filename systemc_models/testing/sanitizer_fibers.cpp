// AddressSanitizer and SystemC's QuickThreads coroutines, for the sanitizer
// lane's binaries only (cmake/TesseraSanitize.cmake links this file into
// every executable that simulates; docs/reliability.md, Sanitizers).
//
// Debian's libsystemc 2.3.4 tells ASan about most stack switches: its
// sc_cor_pkg_qt::yield calls __sanitizer_start_switch_fiber (through weak
// references) with the next coroutine's stack and sc_cor_qt_yieldhelp calls
// __sanitizer_finish_switch_fiber on arrival. Three gaps remain, and each
// breaks ASan (seen: "ASan is ignoring requested __asan_handle_no_return ...
// False positive error reports may follow", then LeakSanitizer crashing on
// a SIGSEGV at exit):
//  - the main coroutine has no stack of its own in SystemC (base 0, size 0),
//    so every switch back to sc_main's stack gives ASan an empty stack;
//  - a thread process that ends leaves through sc_cor_pkg_qt::abort, which
//    switches stacks (qt_abort) without telling ASan at all, so ASan keeps
//    the dead coroutine's stack as the current one;
//  - LeakSanitizer scans thread stacks, globals and the heap, not the
//    mmap'ed coroutine stacks, so what a suspended SC_THREAD holds in its
//    locals when sc_main returns is reported as leaked.
// This file defines the two sanitizer entry points and the two QuickThreads
// symbols libsystemc reaches through the PLT/GOT (qt_abort and
// sc_cor_qt_aborthelp); the executable's definitions take precedence over
// the library's, and each forwards to the real one (dlsym RTLD_NEXT).
//  - A switch to the stack (0, 0) is a switch to sc_main's stack: the main
//    thread's stack is given instead.
//  - qt_abort announces the switch (the dying coroutine's fake stack is
//    dropped) with the stack holding the next coroutine's stack pointer
//    (sc_main's, one already seen, or the mapping from /proc/self/maps for
//    a coroutine never switched to before), and sc_cor_qt_aborthelp, which
//    runs on the next coroutine's stack, finishes it.
//  - Every coroutine stack seen is registered as a LeakSanitizer root region.
// libsystemc passes no fake-stack save to the switches, so ASan's
// detect_stack_use_after_return must stay off (ASAN_OPTIONS), as the lane
// sets it.
#include <dlfcn.h>
#include <pthread.h>
#include <sanitizer/lsan_interface.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace {

using StartSwitch = void (*)(void**, const void*, std::size_t);
using FinishSwitch = void (*)(void*, const void**, std::size_t*);
using QtSwitch = void* (*)(void*, void*, void*, void*);

template <typename F>
F next_definition(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (!f) {
    std::fprintf(stderr, "sanitizer_fibers: no %s after the executable's (%s)\n", name, dlerror());
    std::abort();
  }
  return reinterpret_cast<F>(f);
}

StartSwitch real_start() {
  static const StartSwitch f = next_definition<StartSwitch>("__sanitizer_start_switch_fiber");
  return f;
}
FinishSwitch real_finish() {
  static const FinishSwitch f = next_definition<FinishSwitch>("__sanitizer_finish_switch_fiber");
  return f;
}

struct Stack {
  const char* bottom = nullptr;
  std::size_t size = 0;
  bool holds(const void* p) const {
    const char* c = static_cast<const char*>(p);
    return c >= bottom && c < bottom + size;
  }
};

// The main thread's stack, where sc_main runs: the main coroutine.
const Stack& main_stack() {
  static const Stack s = [] {
    Stack m;
    pthread_attr_t attr;
    void* bottom = nullptr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstack(&attr, &bottom, &m.size);
      pthread_attr_destroy(&attr);
    }
    m.bottom = static_cast<const char*>(bottom);
    return m;
  }();
  return s;
}

// Coroutine stacks seen, by their top (one past their last byte), each a
// leak-check root from its first switch on. Stacks are mmap'ed and unmapped
// by libsystemc; an entry that a new stack overlaps is replaced.
std::map<const char*, Stack>& stacks() {
  static auto* m = new std::map<const char*, Stack>;  // never destroyed: switches may follow static destruction
  return *m;
}

void remember(const Stack& s) {
  auto& m = stacks();
  const auto it = m.find(s.bottom + s.size);
  if (it != m.end() && it->second.bottom == s.bottom) return;
  // Drop what the new stack overlaps: stacks of coroutines since deleted.
  for (auto o = m.upper_bound(s.bottom); o != m.end() && o->second.bottom < s.bottom + s.size;) {
    __lsan_unregister_root_region(o->second.bottom, o->second.size);
    o = m.erase(o);
  }
  m.emplace(s.bottom + s.size, s);
  __lsan_register_root_region(s.bottom, s.size);
}

// The stack holding `sp`: sc_main's, one seen before, else its mapping.
Stack stack_of(const void* sp) {
  if (main_stack().holds(sp)) return main_stack();
  const auto& m = stacks();
  const auto it = m.upper_bound(static_cast<const char*>(sp));
  if (it != m.end() && it->second.holds(sp)) return it->second;
  Stack found;
  if (FILE* maps = std::fopen("/proc/self/maps", "r")) {
    char line[512];
    const unsigned long p = reinterpret_cast<unsigned long>(sp);
    while (std::fgets(line, sizeof line, maps)) {
      unsigned long lo = 0, hi = 0;
      if (std::sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= p && p < hi) {
        found.bottom = reinterpret_cast<const char*>(lo);
        found.size = hi - lo;
        break;
      }
    }
    std::fclose(maps);
  }
  if (found.bottom) remember(found);
  return found;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom,
                                                                            std::size_t size) {
  if (!bottom && size == 0) {
    bottom = main_stack().bottom;
    size = main_stack().size;
  } else {
    remember(Stack{static_cast<const char*>(bottom), size});
  }
  real_start()(fake_stack_save, bottom, size);
}

__attribute__((visibility("default"))) void __sanitizer_finish_switch_fiber(void* fake_stack_save,
                                                                             const void** bottom_old,
                                                                             std::size_t* size_old) {
  real_finish()(fake_stack_save, bottom_old, size_old);
}

// QuickThreads: switch to `sp` for good (the current coroutine has ended),
// calling helper(old, a0, a1) on the new stack.
__attribute__((visibility("default"))) void* qt_abort(void* helper, void* a0, void* a1, void* sp) {
  static const QtSwitch real = next_definition<QtSwitch>("qt_abort");
  const Stack next = stack_of(sp);
  real_start()(nullptr, next.bottom, next.size);  // no save: this coroutine's fake stack goes
  return real(helper, a0, a1, sp);
}

// SystemC's helper for qt_abort (libsystemc's returns 0 and does nothing else).
__attribute__((visibility("default"))) void* sc_cor_qt_aborthelp(void*, void*, void*) {
  real_finish()(nullptr, nullptr, nullptr);
  return nullptr;
}

}  // extern "C"
