// The sanitizer lane's options, compiled into each of its executables (the
// tests and the `tessera` binary they start), so that every process reports
// the same way however it is started; ASAN_OPTIONS and UBSAN_OPTIONS in the
// environment still add to them. cmake/TesseraSanitize.cmake passes the
// report folder; scripts/sanitize fails the lane when it holds any report.
//  - detect_stack_use_after_return=0: libsystemc switches coroutines
//    without saving ASan's fake stacks (sanitizer_fibers.cpp).
//  - log_path: each process that reports writes PREFIX.PID, so a finding in
//    a child process whose test reads only its output still fails the lane.
#ifndef TESSERA_SANITIZE_REPORTS
#error "TESSERA_SANITIZE_REPORTS (the report folder) must be defined"
#endif

extern "C" {

__attribute__((visibility("default"))) const char* __asan_default_options() {
  return "detect_stack_use_after_return=0:detect_leaks=1:check_initialization_order=1:strict_init_order=1:"
         "log_path=" TESSERA_SANITIZE_REPORTS "/asan";
}

__attribute__((visibility("default"))) const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1:log_path=" TESSERA_SANITIZE_REPORTS "/ubsan";
}

}  // extern "C"
