// The kernel registry: self-registered library kernels, variants from each
// kernel's table, tunable parameters (checking, defaults, the fits check),
// and the errors a bad name, value or registration gives.
#include "common/kernel.h"
#include "tessera/kernel_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace tessera::kernels {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const KernelError& e) {
    return e.what();
  }
  return "no error";
}

arch::HwConfig config(const std::string& name) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  return arch::load_config(name).hw;
}

TEST(Registry, EveryLibraryKernelRegistersItselfInNameOrder) {
  std::vector<std::string> names;
  for (const auto& k : registry()) names.push_back(k.name);
  EXPECT_THAT(names, ElementsAre("attention", "calib_dma", "calib_matmul", "calib_vector", "collective", "conv2d", "cumsum",
                                 "elementwise", "gemm", "layernorm", "mlp", "reduce", "rmsnorm", "softmax", "transpose"));
  for (const auto& k : registry()) {
    EXPECT_TRUE(k.origin.empty()) << k.name;
    for (const auto& v : k.variants) EXPECT_FALSE(v.description.empty()) << k.name << " " << v.name;
    for (const auto& p : k.params) EXPECT_FALSE(p.description.empty()) << k.name << " " << p.name;
  }
}

TEST(Registry, AnUnknownVariantIsAnErrorNamingTheChoicesNeverTheDefault) {
  const KernelSpec& gemm = kernel_named("gemm");
  EXPECT_EQ(gemm.variant("").name, "blocked_mnk");
  EXPECT_EQ(error_of([&] { gemm.variant("fastest"); }),
            "kernel 'gemm' has no variant 'fastest' (variants: blocked_mnk, naive, hoisted, blocked_mn, tiled, "
            "hoist_load, block_free_dimension, fully_optimized)");
  EXPECT_THAT(error_of([&] { kernel_named("transpose").variant("dmaa"); }), HasSubstr("did you mean 'dma'?"));
  EXPECT_THAT(error_of([] { kernel_named("gem"); }), HasSubstr("unknown kernel 'gem' (kernels: attention, "));
}

TEST(Registry, ParametersAreCheckedAgainstTheirDeclaration) {
  const KernelSpec& gemm = kernel_named("gemm");
  const Params p = check_params(gemm, "blocked_mnk", {{"bm", "4"}, {"evacuate", "scalar"}});
  EXPECT_EQ(p.integer("bm"), 4);
  EXPECT_EQ(p.choice("evacuate"), "scalar");
  EXPECT_EQ(p.text(), "bm=4,evacuate=scalar");
  EXPECT_EQ(error_of([&] { check_params(gemm, "naive", {{"bm", "2"}}); }),
            "kernel 'gemm': variant 'naive' does not read parameter 'bm' (it applies to blocked_mn, blocked_mnk)");
  EXPECT_EQ(error_of([&] { check_params(gemm, "", {{"bm", "0"}}); }),
            "kernel 'gemm': parameter bm=0 is outside its legal range 1..1024");
  EXPECT_EQ(error_of([&] { check_params(gemm, "", {{"bm", "two"}}); }), "kernel 'gemm': parameter bm=two: not an integer");
  EXPECT_EQ(error_of([&] { check_params(gemm, "", {{"evacuate", "gpsimd"}}); }),
            "kernel 'gemm': parameter evacuate=gpsimd: expected one of vector|scalar");
  const std::string unknown = error_of([&] { check_params(gemm, "", {{"bq", "1"}}); });
  EXPECT_THAT(unknown, HasSubstr("kernel 'gemm' has no tunable parameter 'bq' (it has bm, bn, bk, "));
  EXPECT_THAT(unknown, HasSubstr("evacuate, psum); did you mean 'bm'?"));
  EXPECT_THAT(error_of([&] { check_params(gemm, "", {{"M", "8"}}); }), HasSubstr("'M' is a shape parameter"));
  EXPECT_THAT(error_of([&] { check_params(gemm, "nope", {}); }), HasSubstr("has no variant 'nope'"));
}

TEST(Registry, AFormerShapeParameterNamesWhereItWentNow) {
  EXPECT_EQ(error_of([] { resolve_shape(kernel_named("elementwise"), {{"F", 512}}); }),
            "kernel 'elementwise': 'F' is a tunable parameter, not a shape parameter: set it with --param F=512 (a "
            "suite's or study's 'params')");
}

TEST(Registry, ParamTextParses) {
  EXPECT_EQ(parse_param_text("bm=4,evacuate=scalar"),
            (std::map<std::string, std::string>{{"bm", "4"}, {"evacuate", "scalar"}}));
  EXPECT_EQ(error_of([] { parse_param_text("bm"); }), "--param: 'bm' is not NAME=VALUE");
  EXPECT_EQ(error_of([] { parse_param_text("bm=1,bm=2"); }), "--param: 'bm' is given twice");
}

// Each variant at the default shape gets a legal value for every parameter
// it reads, and none it does not, on every shipped generation.
TEST(Registry, DefaultsAreLegalOnEveryShippedGeneration) {
  for (const char* name : {"tiny", "small", "neuroncore-v1", "neuroncore-v2", "neuroncore-v3", "neuroncore-v4"}) {
    const arch::HwConfig cfg = config(name);
    for (const auto& k : registry())
      for (const auto& v : k.variants) {
        const Shape shape = resolve_shape(k, {});
        Params p;
        ASSERT_NO_THROW(p = resolve_params(k, v.name, cfg, shape, {})) << name << " " << k.name << " " << v.name;
        for (const auto& t : k.params) EXPECT_EQ(p.has(t.name), t.applies_to(v.name)) << k.name << " " << t.name;
      }
  }
}

// The blocking GEMM always had, now as derived defaults: blocked_mnk from
// PSUM banks (8 on v2: 2 x 2 accumulators, two sets) and the largest K
// block SBUF holds double-buffered; what a run sets is kept.
TEST(Registry, GemmBlockingDefaultsAreDerivedAroundWhatARunSets) {
  const KernelSpec& gemm = kernel_named("gemm");
  const arch::HwConfig v2 = config("neuroncore-v2");
  const Shape shape = resolve_shape(gemm, {{"M", 1024}, {"N", 1024}, {"K", 1024}});
  EXPECT_EQ(resolve_params(gemm, "blocked_mnk", v2, shape, {}).text(), "bk=8,bm=2,bn=2,evacuate=vector,psum=fp32");
  EXPECT_EQ(resolve_params(gemm, "blocked_mnk", v2, shape, {{"bm", std::int64_t{1}}}).text(),
            "bk=8,bm=1,bn=2,evacuate=vector,psum=fp32");
  EXPECT_EQ(resolve_params(gemm, "naive", v2, shape, {}).text(), "evacuate=vector,psum=fp32");
}

// Whether the kernel builds its program at `args` (a kernel or builder rule
// refuses it otherwise): what an analytic fits() must agree with.
bool builds(const KernelSpec& spec, Device& dev, const KernelArgs& args) {
  try {
    spec.make(dev, args)->build();
  } catch (const KernelError&) {
    return false;
  }
  return true;
}

// GEMM's analytic fits() says what a build says, on a grid of blockings
// and generations (so a tuner may prune with it and never lose a point).
TEST(Registry, GemmFitsAgreesWithTheBuilder) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  const KernelSpec& gemm = kernel_named("gemm");
  int fit = 0, refused = 0;
  // About 8 x 16 x 8 tiles of each generation, so that blocks of 1 to 32
  // tiles both fit and overflow.
  const std::map<std::string, Shape> shapes = {{"tiny", {{"M", 64}, {"N", 256}, {"K", 64}}},
                                               {"small", {{"M", 256}, {"N", 1024}, {"K", 256}}},
                                               {"neuroncore-v2", {{"M", 1024}, {"N", 8192}, {"K", 1024}}}};
  for (const auto& [name, shape] : shapes) {
    DeviceOptions o;
    o.config = name;
    o.no_data = true;
    Device dev(o);
    for (const char* variant : {"blocked_mn", "blocked_mnk"})
      for (int bm : {1, 3, 8, 32})
        for (int bn : {1, 2, 8})
          for (int bk : {1, 4, 16}) {
            KernelRequest r{"gemm", variant, shape, {}, 1};
            r.params = {{"bm", std::to_string(bm)}, {"bn", std::to_string(bn)}};
            if (std::string(variant) == "blocked_mnk") r.params["bk"] = std::to_string(bk);
            const KernelArgs args = resolve(gemm, dev.config(), r);
            const bool analytic = !gemm.fits(dev.config(), args).has_value();
            const bool built = builds(gemm, dev, args);
            EXPECT_EQ(analytic, built) << name << " " << variant << " " << args.params.text();
            (built ? fit : refused)++;
          }
  }
  EXPECT_GT(fit, 10);
  EXPECT_GT(refused, 10);
}

// Attention's fits() says what building it says, on a grid of key blocks,
// K/V sets, variants and generations, with shapes whose heads fit SBUF
// once, twice or not at all (small builds: the sanitizer lane runs it).
TEST(Registry, AttentionFitsAgreesWithTheBuilder) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  const KernelSpec& attention = kernel_named("attention");
  int fit = 0, refused = 0;
  const std::map<std::string, std::vector<Shape>> shapes = {
      {"tiny", {{{"S", 64}, {"D", 16}, {"H", 2}}, {{"S", 512}, {"D", 32}, {"H", 2}}}},
      {"small", {{{"S", 256}, {"D", 64}, {"H", 2}}}},
      {"neuroncore-v2", {{{"S", 1024}, {"D", 128}, {"H", 2}}}}};
  for (const auto& [name, list] : shapes) {
    DeviceOptions o;
    o.config = name;
    o.no_data = true;
    for (const Shape& shape : list)
      for (const char* variant : {"flash", "flash_causal", "naive"})
        for (int key_chunks : {1, 2, 4, 8})
          for (int kv_sets : {1, 2}) {
            Device dev(o);
            KernelRequest r{"attention", variant, shape, {}, 1};
            r.params = {{"key_chunks", std::to_string(key_chunks)}, {"kv_sets", std::to_string(kv_sets)}};
            const KernelArgs args = resolve(attention, dev.config(), r);
            const auto why = attention.fits(dev.config(), args);
            const bool built = builds(attention, dev, args);
            EXPECT_EQ(!why.has_value(), built) << name << " " << variant << " " << args.params.text() << ": "
                                               << why.value_or("fits");
            (built ? fit : refused)++;
          }
  }
  EXPECT_GT(fit, 10);
  EXPECT_GT(refused, 10);
}

TEST(Registry, CheckFitsNamesTheReason) {
  setenv("TESSERA_CONFIG_DIR", TESSERA_SOURCE_CONFIG_DIR, 1);
  DeviceOptions o;
  o.config = "small";
  EXPECT_FALSE(check_fits(o, {"gemm", "", {}, {}, 1}).has_value());
  const auto why = check_fits(o, {"gemm", "", {{"M", 2048}, {"N", 2048}, {"K", 2048}}, {{"bm", "64"}, {"bk", "64"}}, 1});
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("bytes of SBUF per partition"));
  // A kernel without a fits() hook: the builder's own rule.
  const auto softmax = check_fits(o, {"softmax", "", {{"C", 100000}}, {}, 1});
  ASSERT_TRUE(softmax.has_value());
  EXPECT_THAT(*softmax, HasSubstr("softmax: a row of C=100000"));
}

KernelSpec toy(const std::string& name) {
  KernelSpec s;
  s.name = name;
  s.description = "a test kernel";
  s.variants = {{"only", "the one variant"}};
  s.make = [](Device&, const KernelArgs&) -> std::unique_ptr<KernelInstance> { return nullptr; };
  return s;
}

TEST(Registry, ANameTakenTwiceIsReportedNamingBothOrigins) {
  register_kernel(toy("gemm"));
  EXPECT_EQ(error_of([] { registry(); }),
            "invalid kernel registration: the kernel library: kernel 'gemm' is already registered by the kernel library");
  EXPECT_NO_THROW(registry());  // reported once
}

TEST(Registry, InvalidSpecsAreReported) {
  KernelSpec no_variants = toy("a");
  no_variants.variants.clear();
  register_kernel(no_variants);
  EXPECT_THAT(error_of([] { registry(); }), HasSubstr("kernel 'a' has no variants"));
  KernelSpec bad = toy("b");
  bad.params = {TunableParam::integer("x", 1, 4, 9, "x")};
  register_kernel(bad);
  EXPECT_THAT(error_of([] { registry(); }), HasSubstr("parameter 'x' defaults to 9, outside 1..4"));
  KernelSpec clash = toy("c");
  clash.shape = {{"x", 1, "x"}};
  clash.params = {TunableParam::integer("x", 1, 4, 1, "x")};
  register_kernel(clash);
  EXPECT_THAT(error_of([] { registry(); }), HasSubstr("declares 'x' twice"));
  KernelSpec wrong_variant = toy("d");
  wrong_variant.params = {TunableParam::choice("e", {"p", "q"}, "p", "e").only_for({"other"})};
  register_kernel(wrong_variant);
  EXPECT_THAT(error_of([] { registry(); }), HasSubstr("names variant 'other'"));
  register_kernel(toy("e"));
  EXPECT_NE(find_kernel("e"), nullptr);
}

TEST(Registry, APluginThatIsNotThereIsAnError) {
  EXPECT_EQ(error_of([] { load_plugin("/no/such/plugin.so"); }), "plugin /no/such/plugin.so: no such file");
  EXPECT_THAT(error_of([] { load_plugin(TESSERA_SOURCE_CONFIG_DIR "/tiny.yaml"); }), HasSubstr("cannot load"));
}

}  // namespace
}  // namespace tessera::kernels
