// collective: an all-reduce, reduce-scatter or all-gather of an fp32 [P, F]
// tile across the cores of a chip (collectives.h), as a library kernel, so
// that `tessera run --cores N --kernel collective` times it and checks it
// against the reference. Core i loads rows [i P, (i+1) P) of x [cores P, F],
// runs the collective on them in SBUF and stores them to the same rows of
// out. On one core (the baseline of a multi-core run) it is that load and
// store alone.
#include "collectives/collectives.h"

#include "common/bounds.h"
#include "common/kernel.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <cmath>

namespace tessera::kernels {
namespace {

class Collective : public KernelInstance {
public:
  Collective(Device& dev, const KernelArgs& args)
      : dev_(dev), variant_(args.variant), P_(args.shape.at("P")), F_(args.shape.at("F")), cores_(dev.cores()) {
    const auto algorithm = collectives::parse_algorithm(args.params.choice("algorithm"));
    if (!algorithm) throw KernelError(fmt::format("collective: no algorithm '{}'", args.params.choice("algorithm")));
    algorithm_ = *algorithm;
    if (P_ > dev.config().sbuf.partitions)
      throw KernelError(fmt::format("collective: P={} exceeds the {} SBUF partitions", P_, dev.config().sbuf.partitions));
    x_ = dev.allocate("x", {cores_ * P_, F_}, DType::Fp32);
    out_ = dev.allocate("out", {cores_ * P_, F_}, DType::Fp32);
    if (dev.no_data()) return;
    std::mt19937_64 rng(args.seed);
    xv_ = random_values(static_cast<std::size_t>(cores_ * P_ * F_), -1, 1, DType::Fp32, rng);
    dev.upload(x_, xv_);
  }

  Program build() override { return build_instance({0, 1}, "F"); }

  Program build_instance(const Spmd& spmd, const std::string&) override {
    KernelBuilder kb(dev_.config(), "collective", spmd);
    const auto p = static_cast<std::uint32_t>(P_), f = static_cast<std::uint32_t>(F_);
    const Tile data = kb.sbuf("data", p, f, DType::Fp32);
    kb.label("load");
    kb.dma(data, x_.region(spmd.instance * P_, 0, P_, F_));
    if (variant_ == "all_reduce") collectives::all_reduce(kb, data, algorithm_);
    else if (variant_ == "reduce_scatter") collectives::reduce_scatter(kb, data, algorithm_);
    else collectives::all_gather(kb, data, algorithm_);
    kb.label("store");
    kb.dma(out_.region(spmd.instance * P_, 0, P_, F_), data);
    Program out = kb.build();
    grid_ = spmd.grid;
    return out;
  }

  // A sum over the cores of fp32 values, in an order the algorithm chooses:
  // within gamma_{cores-1} of the sum of their magnitudes. A gathered or
  // untouched value is exact. Reduce-scatter is checked on each core's own
  // chunk only (the others hold partial sums).
  NumericsCheck check() override {
    const auto got = dev_.download(out_);
    const std::int64_t n = grid_, chunk = F_ / n, row = F_;
    std::vector<double> ref(got.size(), 0.0), bound(got.size(), 0.0);
    for (std::int64_t core = 0; core < n; ++core)
      for (std::int64_t r = 0; r < P_; ++r)
        for (std::int64_t c = 0; c < F_; ++c) {
          const std::size_t k = static_cast<std::size_t>((core * P_ + r) * row + c);
          const std::int64_t owner = c / chunk;
          const auto at = [&](std::int64_t i) { return static_cast<double>(xv_[static_cast<std::size_t>((i * P_ + r) * row + c)]); };
          if (variant_ == "all_gather") {
            ref[k] = at(owner);
          } else if (variant_ == "reduce_scatter" && owner != core) {
            ref[k] = got[k];  // a partial sum: not compared
          } else {
            double sum = 0, mag = 0;
            for (std::int64_t i = 0; i < n; ++i) {
              sum += at(i);
              mag += std::fabs(at(i));
            }
            ref[k] = sum;
            bound[k] = gamma(n - 1) * mag;
          }
        }
    return check_within(got, ref, bound, [&](std::size_t k) {
      const auto r = static_cast<std::int64_t>(k) / row;
      return fmt::format("core {} row {} column {}", r / P_, r % P_, static_cast<std::int64_t>(k) % row);
    });
  }

private:
  Device& dev_;
  std::string variant_;
  std::int64_t P_, F_;
  int cores_;
  int grid_ = 1;
  collectives::Algorithm algorithm_ = collectives::Algorithm::Ring;
  Tensor x_, out_;
  std::vector<float> xv_;
};

}  // namespace

KernelSpec collective_spec() {
  KernelSpec spec;
  spec.name = "collective";
  spec.description = "all-reduce (sum), reduce-scatter or all-gather of an fp32 [P,F] tile across a chip's cores";
  spec.variants = {{"all_reduce", "every core ends with the sum: a reduce-scatter, then an all-gather"},
                   {"reduce_scatter", "core i ends with the sum of chunk i (F split into one chunk per core)"},
                   {"all_gather", "every core ends with every core's own chunk"}};
  spec.shape = {{"P", 128, "partitions of each core's tile"}, {"F", 2048, "fp32 columns of each core's tile"}};
  spec.params = {TunableParam::choice("algorithm", collectives::algorithm_names(), "ring",
                                      "ring (cores-1 steps to the next core) or direct (one step to every core)")};
  // F splits into one chunk per core.
  spec.shard_dims = {"F"};
  spec.make = [](Device& dev, const KernelArgs& args) { return std::make_unique<Collective>(dev, args); };
  return spec;
}

TESSERA_REGISTER_KERNEL(collective_spec);

}  // namespace tessera::kernels
