// Prints a digest of the program every job of regression suites builds, one
// line per job ("ID OPS DIGEST"), without simulating anything: a change to
// the builder that must not change any program (a speed-up, a restructuring)
// is checked by diffing this output before and after it.
//
// The digest covers everything a Program holds: each engine's encoded
// instruction stream, each ring's packed descriptors, the labels, semaphore
// owners, tile lives and FLOP counts. A job whose program cannot be built
// prints its error instead of a digest, so a changed error shows too.
//
// --sites digests also what only profiles and run-time errors read: each
// instruction's and descriptor's call site, the source files they name,
// the FLOPs by dtype, the collective labels and the semaphores other cores
// raise (a second line format, so compare --sites output only with itself).
//
// Usage: program_digest [--sites] SUITE.yaml...   (e.g. regressions/smoke.yaml regressions/nightly.yaml)
#include "regress.h"

#include "arch/config.h"
#include "arch/dma_descriptor.h"
#include "common/kernel.h"
#include "tessera/device.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <type_traits>
#include <string>
#include <systemc>  // declares sc_main with C linkage

namespace {

// FNV-1a, 64 bits: a stable digest with no dependency; collisions do not
// matter for comparing a build with itself.
class Digest {
public:
  void bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 1099511628211ull;
  }
  template <typename T>
  void value(const T& v) {
    static_assert(std::is_arithmetic_v<T>);
    bytes(&v, sizeof v);
  }
  void text(const std::string& s) {
    value(s.size());
    bytes(s.data(), s.size());
  }
  std::uint64_t get() const { return h_; }

private:
  std::uint64_t h_ = 1469598103934665603ull;
};

bool with_sites = false;

void digest_sites(const tessera::Program& p, Digest& d) {
  const auto site = [&](const tessera::CallSite& s) {
    d.value(s.file);
    d.value(s.line);
  };
  for (const auto& sites : p.sites) {
    d.value(sites.size());
    for (const auto& s : sites) site(s);
  }
  for (const auto& [queue, sites] : p.ring_sites) {
    d.value(queue.first);
    d.value(queue.second);
    d.value(sites.size());
    for (const auto& s : sites) site(s);
  }
  for (const std::string& f : p.source_files) d.text(f);
  for (const auto& [dtype, flops] : p.matmul_flops_by_dtype) {
    d.value(static_cast<int>(dtype));
    d.value(flops);
  }
  for (const std::string& l : p.collective_labels) d.text(l);
  for (const auto& [index, name] : p.core_semaphores) {
    d.value(index);
    d.text(name);
  }
}

std::uint64_t digest_of(const tessera::Program& p, std::size_t* ops) {
  Digest d;
  *ops = p.instruction_count();
  for (int e = 0; e < tessera::arch::kNumEngines; ++e) {
    const auto code = p.encode(static_cast<tessera::arch::Engine>(e));
    d.value(code.size());
    d.bytes(code.data(), code.size());
    for (std::size_t i = 0; i < p.labels[static_cast<std::size_t>(e)].size(); ++i)
      d.text(p.label(static_cast<tessera::arch::Engine>(e), i));
  }
  for (const auto& [queue, ring] : p.rings) {
    d.value(queue.first);
    d.value(queue.second);
    d.value(ring.size());
    *ops += ring.size();
    for (const auto& desc : ring) {
      const auto packed = tessera::arch::pack(desc);
      d.bytes(packed.data(), packed.size());
    }
  }
  for (const auto& [queue, labels] : p.ring_labels)
    for (std::size_t i = 0; i < labels.size(); ++i) d.text(p.label(queue, i));
  for (const std::string& owner : p.semaphore_owners) d.text(owner);
  for (const auto& t : p.tiles) {
    d.text(t.name);
    d.value(static_cast<int>(t.memory));
    d.value(t.bytes);
    for (const auto& ref : {t.first, t.last}) {
      d.value(ref.dma);
      d.value(ref.engine);
      d.value(ref.queue);
      d.value(ref.index);
    }
  }
  d.value(p.matmul_flops);
  d.value(p.model_flops);
  d.text(p.name);
  if (with_sites) digest_sites(p, d);
  return d.get();
}

std::string digest_job(const tessera::cli::runner::Job& job) {
  try {
    const tessera::kernels::KernelSpec* spec = tessera::kernels::find_kernel(job.kernel);
    if (!spec) return "error: unknown kernel " + job.kernel;
    tessera::DeviceOptions options;
    options.config = job.config;
    options.no_data = true;  // the program does not depend on the data
    for (const auto& s : job.overrides) options.overrides.push_back(tessera::arch::parse_override(s));
    tessera::Device dev(options);
    // Resolved as `tessera run` resolves a job: its parameters checked and
    // the others at their defaults (or the tuning database's).
    tessera::kernels::KernelRequest request;
    request.kernel = job.kernel;
    request.variant = job.variant;
    request.shape = job.shape;
    request.params = job.params;
    request.seed = job.seed;
    request.dtype = job.dtype;
    const tessera::kernels::KernelArgs args = tessera::kernels::resolve(*spec, dev.config(), request);
    auto instance = spec->make(dev, args);
    std::size_t ops = 0;
    const std::uint64_t digest = digest_of(instance->build(), &ops);
    return fmt::format("{} {:016x}", ops, digest);
  } catch (const std::exception& e) {
    return fmt::format("error: {}", e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int argc, char** argv) {
  int first = 1;
  if (argc > 1 && std::strcmp(argv[1], "--sites") == 0) {
    with_sites = true;
    ++first;
  }
  if (argc <= first || std::strcmp(argv[first], "--help") == 0) {
    std::fprintf(stderr, "usage: program_digest [--sites] SUITE.yaml...\n");
    return 2;
  }
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 0);
  for (int i = first; i < argc; ++i) {
    try {
      const auto suite = tessera::cli::regress::load_suite(argv[i]);
      for (const auto& job : suite.jobs) std::printf("%s %s\n", job.id.c_str(), digest_job(job).c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "program_digest: %s\n", e.what());
      return 2;
    }
  }
  return 0;
}
