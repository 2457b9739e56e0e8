// The sanitizer lane's options, compiled into each of its executables (the
// tests and the `tessera` binary they start), so that every process reports
// the same way however it is started; ASAN_OPTIONS and UBSAN_OPTIONS in the
// environment still add to them. cmake/TesseraSanitize.cmake passes the
// report folder; scripts/sanitize fails the lane when it holds any report.
//  - detect_stack_use_after_return=0: libsystemc switches coroutines
//    without saving ASan's fake stacks (sanitizer_fibers.cpp).
//  - log_path: each process that reports writes PREFIX.PID, so a finding in
//    a child process whose test reads only its output still fails the lane.
// gcc 12 links UBSan as its own runtime (libubsan.so.1, beside libasan),
// which reads neither __ubsan_default_options nor UBSAN_OPTIONS' log_path
// (both tried: its reports went to stderr); its other options come from
// UBSAN_OPTIONS (cmake/TesseraTest.cmake sets it for the lane's tests), and
// its report path is set here, by calling that runtime's own
// __sanitizer_set_report_path (a plain call would bind to libasan's).
#ifndef TESSERA_SANITIZE_REPORTS
#error "TESSERA_SANITIZE_REPORTS (the report folder) must be defined"
#endif

#include <dlfcn.h>

extern "C" {

__attribute__((visibility("default"))) const char* __asan_default_options() {
  return "detect_stack_use_after_return=0:detect_leaks=1:check_initialization_order=1:strict_init_order=1:"
         "log_path=" TESSERA_SANITIZE_REPORTS "/asan";
}

}  // extern "C"

namespace {

__attribute__((constructor)) void send_ubsan_reports_to_the_folder() {
  void* ubsan = dlopen("libubsan.so.1", RTLD_NOLOAD | RTLD_LAZY);
  if (!ubsan) return;  // not linked: nothing to redirect
  using SetReportPath = void (*)(const char*);
  if (auto set = reinterpret_cast<SetReportPath>(dlsym(ubsan, "__sanitizer_set_report_path")))
    set(TESSERA_SANITIZE_REPORTS "/ubsan");
  dlclose(ubsan);
}

}  // namespace
