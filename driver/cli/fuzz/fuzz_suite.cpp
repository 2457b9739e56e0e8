// libFuzzer harness: the regression suite parser (the suite half of what
// `tessera regress` reads; a study's needs the kernel registry, see
// docs/reliability.md). Any file gives a suite or a SuiteError; a suite's
// jobs select, shard and write valid JUnit XML.
#include "regress.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tessera::cli;
  const std::string file = "/tmp/tessera_fuzz_" + std::to_string(getpid()) + "_suite.yaml";
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<long>(size));
  try {
    const regress::Suite suite = regress::load_suite(file);
    std::size_t sharded = 0;
    for (int i = 1; i <= 3; ++i) sharded += regress::select(suite, "", "", i, 3).size();
    if (sharded != suite.jobs.size()) std::abort();
    std::vector<regress::JobResult> results;
    for (const auto& j : suite.jobs) {
      regress::JobResult r;
      r.job = j;
      r.status = runner::Status::Fail;
      r.message = j.id;
      results.push_back(r);
      if (results.size() >= 64) break;
    }
    const std::string xml = regress::junit_xml(suite.name, results);
    for (char c : xml)
      if (static_cast<unsigned char>(c) < 0x20 && c != '\n') std::abort();
    (void)regress::summary_markdown(suite.name, results);
  } catch (const regress::SuiteError&) {
  }
  return 0;
}
