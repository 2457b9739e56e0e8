#include "json_text.h"
#include "tessera/run_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace tessera {
namespace {

std::string written(const nlohmann::json& doc) {
  std::string out;
  JsonText w(out);
  w.value(doc);
  return out;
}

// Whatever a document holds, the text is what nlohmann's dump(2) writes for it.
TEST(JsonText, WritesWhatADocumentDumps) {
  const double inf = std::numeric_limits<double>::infinity();
  nlohmann::json doc = {
      {"doubles", {0.1, 2.0, -0.0, 0.0, 1e-7, 1.5e-5, 1e21, 123456789012345680.0, 1.0 / 3, -2.5e-300, 5e-324,
                   std::numeric_limits<double>::max(), std::nan(""), inf, -inf}},
      {"integers", {0, -1, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::uint64_t>::max()}},
      {"strings", {"", "plain", "quote \" backslash \\ slash /", "tab\tnewline\nreturn\rbell\x07 unit\x1f del\x7f",
                   "\b\f", "micro \xc2\xb5s, na\xc3\xafve"}},
      {"empty", {{"object", nlohmann::json::object()}, {"array", nlohmann::json::array()}}},
      {"nested", {{"a", {{"b", {1, {{"c", nullptr}}, nlohmann::json::array({true, false})}}}}}},
      {"key \"quoted\"\n", 1},
  };
  EXPECT_EQ(written(doc), doc.dump(2));
  EXPECT_EQ(written(nlohmann::json::object()), "{}");
  EXPECT_EQ(written(3.0), "3.0");
}

TEST(JsonText, KeysOutOfOrderAreAnError) {
  std::string out;
  JsonText w(out);
  w.begin_object();
  w.member("b", 1);
  try {
    w.member("a", 2);
    FAIL() << "no error for a key out of order";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("key \"a\" after \"b\""));
  }
  EXPECT_THROW(w.member("b", 3), std::logic_error);  // twice is out of order too
}

TEST(JsonText, AValueWithoutItsKeyIsAnError) {
  std::string out;
  JsonText w(out);
  w.begin_object();
  EXPECT_THROW(w.value(1.0), std::logic_error);
}

// As nlohmann's dump does, a string that is not UTF-8 is an error, not bytes
// passed on into a report no reader can parse.
TEST(JsonText, BadUtf8IsAnError) {
  std::string out;
  JsonText w(out);
  EXPECT_THROW(w.value(std::string("label \xff")), nlohmann::json::type_error);
}

RunReport every_section() {
  RunReport r;
  r.kernel = "gemm";
  r.variant = "blocked_mnk";
  r.config = "tiny";
  r.fidelity = "tlm";
  r.shape = {{"M", 64}, {"K", -1}};
  r.params = {{"tile_n", 128}, {"order", "mnk"}};
  r.ok = true;
  r.time_ns = 1234.5;
  r.cycles = 1728;
  r.max_abs_error = std::nan("");
  r.engines["tensor"] = {10, 900.25, 3, 4, 5};
  r.engines["dma"] = {4, 700, 0, 0, 0};
  r.top_stalls = {{"tensor", "waiting for DMA", 200}};
  SiteCost site;
  site.engine = "dma";
  site.site = "kernels/gemm/gemm.cpp:88";
  site.label = "load A";
  site.count = 4;
  site.busy_ns = 600;
  site.dma_bytes = 8192;
  site.waiting_for = {{"DMA", 10}, {"vector", 2.5}};
  r.by_site = {site};
  site.dma_bytes = 0;
  r.by_label = {site, site};
  PathStep step;
  step.resource = "dma 0.1";
  step.kind = "dma";
  step.name = "descriptor 3";
  step.label = "load A";
  step.site = "kernels/gemm/gemm.cpp:88";
  step.index = 3;
  step.start_ns = 10;
  step.end_ns = 600;
  step.from_ns = 0;
  step.to_ns = 600;
  step.gap_ns = 10;
  step.gap = "doorbell";
  r.critical_path.steps = {step};
  step.gap_ns = 0;
  step.gap.clear();
  step.from_ns = 600;
  step.to_ns = 1234.5;
  r.critical_path.steps.push_back(step);
  r.critical_path.waits = {{"tensor", "multiply", "kernels/gemm/gemm.cpp:90", 7, 100, 600, "dma 0.1 descriptor 3",
                            "load A"}};
  r.critical_path.by_engine = {{"dma", "", 1234.5, 10}};
  r.critical_path.by_label = {{"dma", "load A", 1234.5, 10}};
  r.critical_path.end_ns = 1234.5;
  r.per_core.resize(2);
  r.per_core[1].bound_by = "tensor";
  r.per_core[1].link_bytes_sent = 4096;
  r.shard = "M";
  r.set_baseline(2000);
  r.collectives = {{"all-reduce", 50}};
  r.collective_ns = 50;
  return r;
}

// report.json reads back as the document it is the dump of, every section
// included: the text and the document (to_json, Python's to_dict) agree.
TEST(RunReportJson, TheTextIsItsDocumentsDump) {
  const RunReport r = every_section();
  const std::string text = r.json_text();
  const nlohmann::json doc = nlohmann::json::parse(text);
  EXPECT_EQ(text, doc.dump(2));
  EXPECT_EQ(doc, r.to_json());
  EXPECT_EQ(doc["critical_path"]["steps"][0]["gap"]["reason"], "doorbell");
  EXPECT_FALSE(doc["critical_path"]["steps"][1].contains("gap"));
  EXPECT_EQ(doc["by_site"][0]["dma_bytes"], 8192.0);
  EXPECT_FALSE(doc["by_label"][0].contains("dma_bytes"));
  EXPECT_EQ(doc["by_label"][0]["label"], "load A");
  EXPECT_TRUE(doc["max_abs_error"].is_null());
  EXPECT_EQ(doc["cores"], 2);
  EXPECT_EQ(doc["shape"]["K"], -1);
  EXPECT_DOUBLE_EQ(doc["scaling"]["speedup"].get<double>(), 2000 / 1234.5);
  EXPECT_EQ(RunReport{}.to_json()["critical_path"], nlohmann::json::object());
}

// The caller's members go in at their places among the report's, and
// replace one of the same name.
TEST(RunReportJson, ExtraMembersJoinTheTopLevel) {
  const RunReport r = every_section();
  const nlohmann::json extra = {{"seed", 7}, {"dtype", "bf16"}, {"kernel", "renamed"}, {"retune", {{"budget", 8}}}};
  const std::string text = r.json_text(extra);
  const nlohmann::json doc = nlohmann::json::parse(text);
  EXPECT_EQ(text, doc.dump(2));
  EXPECT_EQ(doc["seed"], 7);
  EXPECT_EQ(doc["dtype"], "bf16");
  EXPECT_EQ(doc["kernel"], "renamed");
  EXPECT_EQ(doc["retune"]["budget"], 8);
  nlohmann::json expected = r.to_json();
  expected.update(extra);
  EXPECT_EQ(doc, expected);
}

// One member alone, as the whole text has it (Python's report["key"]).
TEST(RunReportJson, OneMemberIsItsPartOfTheWhole) {
  const RunReport r = every_section();
  const nlohmann::json whole = r.to_json();
  for (const auto& [key, value] : whole.items()) {
    const std::optional<std::string> text = r.json_member(key);
    ASSERT_TRUE(text) << key;
    EXPECT_EQ(*text, value.dump(2)) << key;
  }
  EXPECT_FALSE(r.json_member("no such member"));
  EXPECT_FALSE(RunReport{}.json_member("per_core"));  // a single core's report has none
}

}  // namespace
}  // namespace tessera
