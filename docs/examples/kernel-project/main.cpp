// A program of your own on Tessera: runs the axpy kernel (registered by
// axpy.cpp, built into this program) on a config given on the command line,
// through the same registry call `tessera run` makes, and prints the report.
#include "common/kernel.h"
#include "tessera/device.h"
#include "tessera/kernel_builder.h"

#include <cstdlib>
#include <iostream>
#include <systemc>

// SystemC programs start at sc_main; main() only silences SystemC's banner.
int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int argc, char** argv) {
  tessera::DeviceOptions options;
  options.config = argc > 1 ? argv[1] : "small";  // a shipped config name or a YAML file
  options.fidelity = tessera::arch::Fidelity::Tlm;
  try {
    tessera::Device dev(options);
    tessera::kernels::KernelRequest request;
    request.kernel = "axpy";
    request.shape = {{"R", 200}, {"C", 1000}};
    request.params = {{"F", "256"}, {"B", "3"}};
    const tessera::RunReport report = tessera::kernels::run_kernel(dev, request);
    std::cout << report.summary();
    return report.ok && report.correct ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "axpy_demo: " << e.what() << '\n';
    return 2;
  }
}
