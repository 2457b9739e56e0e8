#include "registry_kernels.h"

#include "common/kernel.h"

namespace tessera::cli::sweep {
namespace {

class Registry : public KernelLookup {
public:
  bool has(const std::string& kernel) const override { return kernels::find_kernel(kernel) != nullptr; }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& s : kernels::registry()) out.push_back(s.name);
    return out;
  }
  bool shards(const std::string& kernel) const override { return !spec(kernel).shard_dims.empty(); }
  void check_variant(const std::string& kernel, const std::string& variant) const override {
    spec(kernel).variant(variant);
  }
  void check_shard(const std::string& kernel, const std::string& shard) const override {
    kernels::resolve_shard(spec(kernel), shard);
  }
  void check_dtype(const std::string& kernel, const std::string& variant, const std::string& dtype) const override {
    const kernels::KernelSpec& s = spec(kernel);
    kernels::check_dtype(s, s.variant(variant).name, dtype);
  }
  void check_params(const std::string& kernel, const std::string& variant,
                    const std::map<std::string, std::string>& params) const override {
    kernels::check_params(spec(kernel), variant, params);
  }
  void check_shape(const std::string& kernel, const std::map<std::string, std::int64_t>& shape) const override {
    kernels::resolve_shape(spec(kernel), shape);
  }

private:
  static const kernels::KernelSpec& spec(const std::string& kernel) { return kernels::kernel_named(kernel); }
};

}  // namespace

const KernelLookup& registry_kernels() {
  static const Registry registry;
  return registry;
}

}  // namespace tessera::cli::sweep
