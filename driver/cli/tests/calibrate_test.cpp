// tessera calibrate: the shipped suite meets every documented figure or says
// why not, and docs/calibration.md shows this run's table; the rules that
// keep the suite honest (a known gap that closes must lose its marker, a row
// outside its tolerance fails, a bad suite names the file and line).
#include "tessera_process.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using tessera::test_support::run_tessera;

struct Scratch {
  fs::path dir = fs::temp_directory_path() / fmt::format("tessera_calibrate_test_{}", ::getpid());
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

// One cheap row on tiny: independent tensor_scalar [8 x 64], whose model cost
// is 64 cycles a repeat (tiny's 10-cycle overhead hides behind the one before).
std::string row(const std::string& id, const std::string& documented, const std::string& extra = "") {
  return fmt::format(R"(  - id: {}
    what: a test row
    config: tiny
    kernel: calib_vector
    variant: tensor_scalar
    shape: {{P: 8, N: 64}}
    repeat: {{R: [2, 4]}}
    measure: time_ns
    as: cycles:vector
    documented: {}
    source: "a test"
{})",
                     id, documented, extra);
}

std::string suite(const std::string& rows) { return "rows:\n" + rows; }

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  return text.replace(text.find(from), from.size(), to);
}

TEST(Calibrate, ShippedSuiteHoldsAndItsTableIsCurrent) {
  Scratch s;
  const auto r = run_tessera(fmt::format("calibrate -j 2 --out {} --check-doc {}/docs/calibration.md",
                                         (s.dir / "out").string(), TESSERA_SOURCE_DIR));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("0 failing"));
}

TEST(Calibrate, RowWithinToleranceIsCalibrated) {
  Scratch s;
  const auto r = run_tessera(fmt::format("calibrate {} --out {}", s.write("ok.yaml", suite(row("ok", "64"))),
                                         (s.dir / "out").string()));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("calibrated"));
  EXPECT_THAT(r.out, HasSubstr("64 vector cycles"));
  std::ifstream table(s.dir / "out" / "calibration.md");
  EXPECT_THAT(std::string(std::istreambuf_iterator<char>(table), {}), HasSubstr("| `ok` | a test row | tiny |"));
}

TEST(Calibrate, RowOutsideToleranceFails) {
  Scratch s;
  const auto r = run_tessera(fmt::format("calibrate {} --out {}", s.write("far.yaml", suite(row("far", "100"))),
                                         (s.dir / "out").string()));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("FAIL far"));
  EXPECT_THAT(r.out, HasSubstr("outside its tolerance"));
}

TEST(Calibrate, KnownGapOutsideToleranceIsAcceptedAndShown) {
  Scratch s;
  const auto r = run_tessera(fmt::format(
      "calibrate {} --out {}", s.write("gap.yaml", suite(row("gap", "100", "    known_gap: the overhead is wrong\n"))),
      (s.dir / "out").string()));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("NOT CALIBRATED"));
  std::ifstream table(s.dir / "out" / "calibration.md");
  EXPECT_THAT(std::string(std::istreambuf_iterator<char>(table), {}),
              HasSubstr("**NOT CALIBRATED**: the overhead is wrong"));
}

TEST(Calibrate, KnownGapThatClosedFailsUntilTheMarkerIsRemoved) {
  Scratch s;
  const auto r = run_tessera(fmt::format(
      "calibrate {} --out {}", s.write("stale.yaml", suite(row("stale", "64", "    known_gap: it was wrong\n"))),
      (s.dir / "out").string()));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("remove the known_gap marker of row 'stale'"));
  EXPECT_THAT(r.out, HasSubstr("stale.yaml:2"));
}

TEST(Calibrate, RangesAndRelativeRows) {
  Scratch s;
  const std::string rows = row("base", "64") + row("inside", "{min: 60, max: 70}") +
                           row("outside", "{min: 1, max: 2}") + row("same", "1", "    relative_to: base\n");
  const auto r = run_tessera(fmt::format("calibrate {} --out {}", s.write("r.yaml", suite(rows)),
                                         (s.dir / "out").string()));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("FAIL outside"));
  EXPECT_THAT(r.out, Not(HasSubstr("FAIL inside")));
  EXPECT_THAT(r.out, Not(HasSubstr("FAIL same")));
  EXPECT_THAT(r.out, HasSubstr("1 x"));
}

TEST(Calibrate, RunThatFailsIsAFailureUnlessAKnownGap) {
  Scratch s;
  // fp32 matmul inputs on a generation without them: the kernel fails to build.
  const std::string fp32 = R"(  - id: fp32
    what: fp32 matmuls
    config: tiny
    set: [tensor.fp32_cycles_per_column=0]
    kernel: calib_matmul
    variant: fp32
    repeat: {R: [2, 4]}
    measure: time_ns
    as: cycles:tensor
    documented: 256
    source: "a test"
)";
  auto r = run_tessera(fmt::format("calibrate {} --out {}", s.write("f.yaml", suite(fp32)), (s.dir / "out").string()));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("did not run"));
  r = run_tessera(fmt::format("calibrate {} --out {}",
                              s.write("g.yaml", suite(fp32 + "    known_gap: fp32 is not modelled\n")),
                              (s.dir / "out").string()));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("NOT CALIBRATED"));
}

TEST(Calibrate, CheckDocFailsWhenTheTableIsOld) {
  Scratch s;
  const std::string doc = s.write("doc.md", "# Page\n<!-- BEGIN calibration table: generated by `tessera calibrate "
                                            "--update-doc` -->\nold\n<!-- END calibration table -->\nafter\n");
  const std::string file = s.write("ok.yaml", suite(row("ok", "64")));
  auto r = run_tessera(fmt::format("calibrate {} --out {} --check-doc {}", file, (s.dir / "out").string(), doc));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("is out of date"));
  r = run_tessera(fmt::format("calibrate {} --out {} --update-doc {}", file, (s.dir / "out").string(), doc));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  r = run_tessera(fmt::format("calibrate {} --out {} --check-doc {}", file, (s.dir / "out").string(), doc));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  std::ifstream in(doc);
  const std::string text(std::istreambuf_iterator<char>(in), {});
  EXPECT_THAT(text, HasSubstr("| `ok` |"));
  EXPECT_THAT(text, HasSubstr("after\n"));
}

// The documents --check-doc and --update-doc name are read before any run: a
// missing one, or one without the markers, is bad input named at once (it used
// to read as empty and be reported only after the whole suite had run).
TEST(Calibrate, DocumentsAreCheckedBeforeTheRuns) {
  Scratch s;
  const std::string file = s.write("ok.yaml", suite(row("ok", "64")));
  const std::string out = (s.dir / "out").string();
  const std::string missing = (s.dir / "missing.md").string();
  auto r = run_tessera(fmt::format("calibrate {} --out {} --check-doc {}", file, out, missing));
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(missing + ": cannot read: No such file or directory"));
  EXPECT_THAT(r.err, Not(HasSubstr("rows,")));  // nothing ran
  const std::string plain = s.write("plain.md", "# A page without the table\n");
  r = run_tessera(fmt::format("calibrate {} --out {} --update-doc {}", file, out, plain));
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(plain + " has no generated-table markers"));
  EXPECT_THAT(r.err, Not(HasSubstr("rows,")));
  EXPECT_FALSE(fs::exists(s.dir / "out" / "results.json"));
}

TEST(Calibrate, BadSuitesNameFileAndLine) {
  Scratch s;
  struct Bad {
    std::string text, message;
  };
  const Bad bad[] = {
      {suite(row("a", "64", "    colour: red\n")), "bad.yaml:13: unknown key 'colour' in a row"},
      {suite(row("a", "64") + row("a", "64")), "row id 'a' appears twice"},
      {"rows:\n  - id: a\n    what: x\n    config: tiny\n    kernel: nope\n    measure: time_ns\n    documented: 1\n"
       "    source: s\n",
       "bad.yaml:5: row 'a': no kernel 'nope'"},
      {suite(replaced(row("a", "64"), "tensor_scalar", "nope")), "bad.yaml:6: row 'a': kernel 'calib_vector' has no variant 'nope'"},
      {suite(row("a", "64", "    relative_to: later\n")), "relative_to 'later' is not an earlier row"},
      {suite(replaced(row("a", "64"), "cycles:vector", "furlongs")), "bad.yaml:10: 'as: furlongs'"},
      {suite(row("a", "{min: 2, max: 1}")), "max is below min"},
      {"rows:\n  - id: a\n    what: x\n    config: nope\n    kernel: calib_dma\n    measure: time_ns\n    documented: 1\n"
       "    source: s\n",
       "bad.yaml:4: row 'a': config 'nope'"},
  };
  for (const auto& b : bad) {
    const auto r = run_tessera(fmt::format("calibrate {} --list", s.write("bad.yaml", b.text)));
    EXPECT_EQ(r.status, 2) << b.message << "\n" << r.out;
    EXPECT_THAT(r.err, HasSubstr(b.message)) << b.text;
  }
}

}  // namespace
