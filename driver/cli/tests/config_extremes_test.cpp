// Every config key at each end of its limits, through the real binary on a
// small GEMM: the run either passes with sensible figures or is refused with
// a message naming the key or rule, never a crash, a hang or an absurd figure.
// Just past each limit the loader refuses the value by name.
#include "tessera_process.h"

#include "arch/config_schema.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <string>

namespace {

using ::testing::HasSubstr;
using tessera::arch::FieldSpec;

std::string text_of(const FieldSpec& f, double v) {
  if (f.kind() == FieldSpec::Kind::Int) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.17g}", v);
}

class KeyExtremes : public ::testing::TestWithParam<std::string> {};

TEST_P(KeyExtremes, EachEndRunsOrIsRefusedByName) {
  const FieldSpec* f = tessera::arch::find_field(GetParam());
  ASSERT_NE(f, nullptr);
  for (const double v : {f->min, f->max}) {
    const std::string set = fmt::format("{}={}", f->path, text_of(*f, v));
    const auto t0 = std::chrono::steady_clock::now();
    // tiny's other keys stay as they are; a run bounded at a minute.
    const auto r = tessera::test_support::run_tessera(
        fmt::format("run --config tiny --kernel gemm --shape M=8,N=64,K=8 --fidelity tlm --no-data --json --set {}", set),
        "timeout -s KILL 60 env");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(seconds, 30) << set;
    if (r.status == 0) {
      const auto report = nlohmann::json::parse(r.out);
      const double t = report.at("time_ns");
      EXPECT_TRUE(std::isfinite(t) && t > 0 && t < 3600e9) << set << ": time_ns " << t;
      const double hfu = report.value("hfu_percent", 0.0);
      EXPECT_TRUE(hfu >= 0 && hfu <= 100) << set << ": HFU " << hfu;
    } else {
      // A value within its limits refused only by a rule between keys (at
      // the file and line of the key to change) or by the kernel (too few
      // semaphores or queues for its program), in so many words.
      EXPECT_EQ(r.status, 2) << set << "\n" << r.err;
      EXPECT_TRUE(r.err.find("tiny.yaml:") != std::string::npos || r.err.find("--set " + set) != std::string::npos ||
                  r.err.rfind("tessera run: ", 0) == 0)
          << set << ": " << r.err;
      EXPECT_THAT(r.err, ::testing::Not(HasSubstr("uncaught"))) << set;
    }
  }
  // Just past each limit: refused by name before anything runs.
  const double below = f->kind() == FieldSpec::Kind::Int ? f->min - 1 : f->min / 2 - (f->min == 0 ? 1 : 0);
  const double above = f->kind() == FieldSpec::Kind::Int ? f->max + 1 : f->max * 2;
  for (const double v : {below, above}) {
    if (f->zero_allowed && v == 0) continue;
    const auto r = tessera::test_support::run_tessera(
        fmt::format("config show tiny --set {}={}", f->path, text_of(*f, v)));
    EXPECT_EQ(r.status, 2) << f->path << "=" << v;
    EXPECT_THAT(r.err, HasSubstr(f->path + ": must be")) << r.err;
  }
}

std::vector<std::string> numeric_keys() {
  std::vector<std::string> keys;
  for (const auto& f : tessera::arch::schema())
    if (f.kind() == FieldSpec::Kind::Int || f.kind() == FieldSpec::Kind::Float) keys.push_back(f.path);
  return keys;
}

INSTANTIATE_TEST_SUITE_P(Schema, KeyExtremes, ::testing::ValuesIn(numeric_keys()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           for (char& c : name)
                             if (c == '.') c = '_';
                           return name;
                         });

}  // namespace
