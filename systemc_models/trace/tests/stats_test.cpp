// Statistics: groups name them after the model that owns them, a name
// defined twice is an error, and stats.txt keeps its format.
#include "trace/stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <systemc>

#include <sstream>

namespace tessera::trace {
namespace {

using ::testing::HasSubstr;

struct Model : sc_core::sc_module {
  struct ModelStats : Group {
    ModelStats(Stats& stats, const sc_core::sc_object& owner)
        : Group(stats, owner),
          bytes(*this, "bytes", "bytes", "bytes moved"),
          ops(*this, "ops", "count", "operations"),
          per_op(*this, "bytes_per_op", "bytes", "bytes per operation",
                 [this] { return ops.value() > 0 ? bytes.value() / ops.value() : 0.0; }) {}
    Scalar bytes, ops;
    Formula per_op;
  };
  Model(sc_core::sc_module_name name, Stats& stats) : sc_module(name), stats(stats, *this) {}
  ModelStats stats;
};

struct Top : sc_core::sc_module {
  Top(sc_core::sc_module_name name, Stats& stats) : sc_module(name), inner("inner", stats) {}
  Model inner;
};

TEST(Stats, GroupsAreNamedAfterTheirSystemCObjectAndChildGroupsAfterTheirParent) {
  Stats stats;
  Top top("core", stats);
  Group child(top.inner.stats, "datapath");
  Scalar cycles(child, "cycles", "cycles", "cycles evaluated");
  Group totals(stats, "dma");
  Scalar all(totals, "bytes", "bytes", "bytes of every engine");
  top.inner.stats.bytes += 4096;
  ++top.inner.stats.ops;
  ++top.inner.stats.ops;
  EXPECT_EQ(top.inner.stats.bytes.name(), "core.inner.bytes");
  EXPECT_EQ(cycles.name(), "core.inner.datapath.cycles");
  EXPECT_EQ(all.name(), "dma.bytes");
  EXPECT_EQ(top.inner.stats.per_op.value(), 2048);
  EXPECT_EQ(stats.value("core.inner.bytes_per_op"), 2048);
  EXPECT_TRUE(stats.has("core.inner.datapath.cycles"));
}

TEST(Stats, ANameDefinedTwiceIsAnErrorNamingIt) {
  Stats stats;
  Model m("m", stats);
  try {
    Scalar again(m.stats, "bytes", "bytes", "the same name again");
    FAIL() << "a second 'm.bytes' was accepted";
  } catch (const StatsError& e) {
    EXPECT_STREQ(e.what(), "statistic 'm.bytes' is defined twice; each statistic needs a name of its own");
  }
  // The first definition is untouched.
  m.stats.bytes += 1;
  EXPECT_EQ(stats.value("m.bytes"), 1);
}

TEST(Stats, AStatisticLeavesTheRegistryWithItsModel) {
  Stats stats;
  {
    Model m("gone", stats);
    EXPECT_TRUE(stats.has("gone.bytes"));
  }
  EXPECT_FALSE(stats.has("gone.bytes"));
  EXPECT_THAT([&] { stats.value("gone.bytes"); }, ::testing::Throws<StatsError>());
  Model again("gone", stats);  // the name is free again
  EXPECT_TRUE(stats.has("gone.bytes"));
}

// stats.txt: one line per statistic sorted by name, the name padded to 52
// columns, the value right-aligned in 18 with 6 significant digits, then
// "# description (unit)".
TEST(Stats, DumpKeepsTheStatsTxtFormat) {
  Stats stats;
  Model m("core", stats);
  m.stats.bytes += 1234567890;
  m.stats.ops += 3;
  std::ostringstream os;
  stats.dump(os);
  EXPECT_EQ(os.str(),
            "core.bytes                                                  1.23457e+09 # bytes moved (bytes)\n"
            "core.bytes_per_op                                           4.11523e+08 # bytes per operation (bytes)\n"
            "core.ops                                                              3 # operations (count)\n");
  EXPECT_EQ(stats.to_json(), (nlohmann::json{{"core.bytes", 1234567890.0},
                                             {"core.bytes_per_op", 1234567890.0 / 3},
                                             {"core.ops", 3.0}}));
}

}  // namespace
}  // namespace tessera::trace
