// libFuzzer harness: the study parser (what `tessera sweep` reads), checked
// against a table of kernels instead of the kernel registry, which would
// link the simulator (study.h's KernelLookup). Any file gives a study or a
// StudyError naming its file; a study's grid expands to as many points as
// the parser counted, its points shard into a partition of the grid, and
// its CSV and JSON results are written.
#include "study.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace {

using namespace tessera::cli;

struct TableKernel {
  std::string name;
  std::vector<std::string> variants;                       // the first is the default
  std::vector<std::pair<std::string, std::int64_t>> dims;  // shape parameter, its minimum
  std::vector<std::string> dtypes;                         // the first is the default
  std::vector<std::string> shard_dims;
  std::vector<std::string> params;  // integer parameters from 1 to 64
};

// The shipped studies' kernels, as the registry declares them (names,
// variants, shape parameters, dtypes, shard dimensions) and a few
// parameters: enough for the parser's own checks and messages.
const std::vector<TableKernel> kTable = {
    {"gemm", {"naive", "hoisted", "blocked_mn", "blocked_mnk"}, {{"M", 1}, {"N", 1}, {"K", 1}},
     {"bf16", "fp8_e4m3", "fp32"}, {"M", "N", "K"}, {"bm", "bn", "bk"}},
    {"mlp", {"fused"}, {{"T", 1}, {"D", 1}, {"F", 1}}, {"bf16", "fp8_e4m3"}, {}, {}},
    {"attention", {"flash", "naive"}, {{"S", 1}, {"D", 1}, {"H", 1}}, {"bf16"}, {}, {"bq"}},
    {"elementwise", {"gelu", "add"}, {{"R", 1}, {"C", 1}}, {"bf16"}, {}, {}},
    {"conv2d", {"im2col"}, {{"N", 1}, {"C", 1}, {"H", 1}, {"W", 1}, {"K", 1}, {"pad", 0}}, {"bf16"}, {}, {}},
    {"allreduce", {"ring"}, {{"F", 1}}, {"bf16"}, {"F"}, {}},
};

class Table : public sweep::KernelLookup {
public:
  bool has(const std::string& kernel) const override { return find(kernel) != nullptr; }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& k : kTable) out.push_back(k.name);
    return out;
  }
  bool shards(const std::string& kernel) const override { return !get(kernel).shard_dims.empty(); }
  void check_variant(const std::string& kernel, const std::string& variant) const override {
    const TableKernel& k = get(kernel);
    if (!variant.empty() && std::find(k.variants.begin(), k.variants.end(), variant) == k.variants.end())
      throw std::runtime_error(fmt::format("kernel '{}' has no variant '{}' (variants: {})", kernel, variant,
                                           fmt::join(k.variants, ", ")));
  }
  void check_shard(const std::string& kernel, const std::string& shard) const override {
    const TableKernel& k = get(kernel);
    if (!shard.empty() && std::find(k.shard_dims.begin(), k.shard_dims.end(), shard) == k.shard_dims.end())
      throw std::runtime_error(fmt::format("--shard {}: kernel '{}' shards over {}", shard, kernel,
                                           fmt::join(k.shard_dims, " or ")));
  }
  void check_dtype(const std::string& kernel, const std::string& variant, const std::string& dtype) const override {
    check_variant(kernel, variant);
    const TableKernel& k = get(kernel);
    if (!dtype.empty() && std::find(k.dtypes.begin(), k.dtypes.end(), dtype) == k.dtypes.end())
      throw std::runtime_error(fmt::format("kernel '{}' takes --dtype {}, not '{}'", kernel, fmt::join(k.dtypes, ", "), dtype));
  }
  void check_params(const std::string& kernel, const std::string& variant,
                    const std::map<std::string, std::string>& params) const override {
    check_variant(kernel, variant);
    const TableKernel& k = get(kernel);
    for (const auto& [name, value] : params) {
      if (std::find(k.params.begin(), k.params.end(), name) == k.params.end())
        throw std::runtime_error(fmt::format("kernel '{}' has no tunable parameter '{}'", kernel, name));
      char* end = nullptr;
      const long v = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end || v < 1 || v > 64)
        throw std::runtime_error(fmt::format("kernel '{}': {}={}: expected 1..64", kernel, name, value));
    }
  }
  void check_shape(const std::string& kernel, const std::map<std::string, std::int64_t>& shape) const override {
    const TableKernel& k = get(kernel);
    for (const auto& [dim_name, value] : shape) {
      const std::string& name = dim_name;  // clang 14 cannot capture a structured binding
      const auto dim = std::find_if(k.dims.begin(), k.dims.end(), [&](const auto& d) { return d.first == name; });
      if (dim == k.dims.end())
        throw std::runtime_error(fmt::format("kernel '{}' has no shape parameter '{}'", kernel, name));
      if (value < dim->second || value > (std::int64_t{1} << 24))
        throw std::runtime_error(fmt::format("kernel '{}': shape {}={} is out of range", kernel, name, value));
    }
  }

private:
  static const TableKernel* find(const std::string& kernel) {
    for (const auto& k : kTable)
      if (k.name == kernel) return &k;
    return nullptr;
  }
  // The parser asks about a kernel only after has() said yes.
  static const TableKernel& get(const std::string& kernel) {
    const TableKernel* k = find(kernel);
    if (!k) {
      std::fprintf(stderr, "the study parser asked about kernel '%s', which has() refused\n", kernel.c_str());
      std::abort();
    }
    return *k;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Table table;
  const std::string file = "/tmp/tessera_fuzz_" + std::to_string(getpid()) + "_study.yaml";
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<long>(size));
  try {
    const sweep::Study study = sweep::load_study(file, table);
    // As many points as the parser counted when it bounded the grid.
    std::size_t grid = 1, runs = 0;
    for (const auto& p : study.parameters) grid *= p.values.size();
    for (const auto& k : study.kernels)
      runs += std::max<std::size_t>(1, k.variants.size()) * std::max<std::size_t>(1, k.dtypes.size()) *
              std::max<std::size_t>(1, k.cores.size()) * std::max<std::size_t>(1, k.shards.size()) *
              std::max<std::size_t>(1, k.shapes.size()) *
              std::max<std::size_t>(1, k.params.size());
    const std::vector<sweep::Point> points = sweep::expand(study);
    if (points.size() != grid * runs || points.size() > 10000) {
      std::fprintf(stderr, "%zu points expanded, %zu x %zu counted\n", points.size(), grid, runs);
      std::abort();
    }
    std::size_t sharded = 0;
    for (int i = 1; i <= 3; ++i) sharded += sweep::shard(points, i, 3).size();
    if (sharded != points.size()) std::abort();
    const std::vector<runner::JobResult> none;
    (void)sweep::results_csv(study, points, none);
    (void)sweep::results_json(study, points, none).dump();
  } catch (const sweep::StudyError& e) {
    // Every refusal names the study's file.
    if (std::string(e.what()).find(file) == std::string::npos) {
      std::fprintf(stderr, "a StudyError without the file's name: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
