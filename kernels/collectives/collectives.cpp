#include "collectives/collectives.h"

#include <fmt/format.h>

namespace tessera::kernels::collectives {
namespace {

// The launch's cores, this core, and the chunk width, checked.
struct Layout {
  int cores, rank;
  std::uint32_t chunk;
  int at(int offset) const { return ((rank + offset) % cores + cores) % cores; }
};

Layout layout(const KernelBuilder& kb, const Tile& data, const char* what) {
  const Spmd& s = kb.spmd();
  if (data.memory != arch::Memory::Sbuf || data.dtype != DType::Fp32)
    throw KernelError(fmt::format("{}('{}'): takes an fp32 SBUF tile", what, data.name));
  if (data.free % static_cast<std::uint32_t>(s.grid) != 0)
    throw KernelError(fmt::format("{}('{}'): {} columns do not split into {} equal chunks, one per core", what,
                                  data.name, data.free, s.grid));
  return {s.grid, s.instance, data.free / static_cast<std::uint32_t>(s.grid)};
}

Tile chunk(const Tile& t, const Layout& l, int c) { return t.columns(static_cast<std::uint32_t>(c) * l.chunk, l.chunk); }

}  // namespace

const char* to_string(Algorithm a) { return a == Algorithm::Ring ? "ring" : "direct"; }

std::optional<Algorithm> parse_algorithm(const std::string& text) {
  if (text == "ring") return Algorithm::Ring;
  if (text == "direct") return Algorithm::Direct;
  return std::nullopt;
}

const std::vector<std::string>& algorithm_names() {
  static const std::vector<std::string> names{"ring", "direct"};
  return names;
}

ReduceScatter::ReduceScatter(KernelBuilder& kb, std::uint32_t partitions, std::uint32_t columns,
                             Algorithm algorithm, const std::string& name)
    : kb_(kb), algorithm_(algorithm), name_(name), cores_(kb.spmd().grid), rank_(kb.spmd().instance),
      partitions_(partitions), columns_(columns) {
  if (columns % static_cast<std::uint32_t>(cores_) != 0)
    throw KernelError(fmt::format("reduce_scatter('{}'): {} columns do not split into {} equal chunks, one per core",
                                  name, columns, cores_));
  chunk_ = columns / static_cast<std::uint32_t>(cores_);
  if (cores_ == 1) return;
  const auto n = static_cast<std::uint32_t>(cores_);
  // Ring: a buffer and a semaphore pair per step, so that a later step's
  // copy landing first is never taken for an earlier one's. Direct: a slot
  // per sender.
  const std::uint32_t slots = algorithm == Algorithm::Ring ? n - 1 : n;
  recv_ = kb.sbuf(name + " recv", partitions, slots * chunk_, DType::Fp32);
  const std::uint32_t pairs = algorithm == Algorithm::Ring ? n - 1 : 1;
  for (std::uint32_t s = 0; s < pairs; ++s) {
    arrived_.push_back(kb.core_semaphore(fmt::format("{} arrived {}", name, s)));
    free_.push_back(kb.core_semaphore(fmt::format("{} free {}", name, s)));
  }
}

void ReduceScatter::operator()(const Tile& data) {
  const Layout l = layout(kb_, data, "reduce_scatter");
  if (l.cores == 1) return;
  if (data.partitions > partitions_ || data.free > columns_)
    throw KernelError(fmt::format("reduce_scatter('{}'): tile '{}' is [{} x {}], the collective was made for at most "
                                  "[{} x {}]",
                                  name_, data.name, data.partitions, data.free, partitions_, columns_));
  KernelBuilder& kb = kb_;
  kb.collective_label(name_ + " reduce-scatter");
  const auto n = static_cast<std::uint32_t>(l.cores);
  const std::uint32_t run = runs_++;
  // Slot i at the widest run's offset, as wide as this run's chunk.
  const auto slot_of = [&](std::uint32_t i) { return recv_.slice(0, data.partitions, i * chunk_, l.chunk); };
  if (algorithm_ == Algorithm::Ring) {
    // Step s: send chunk rank-1-s (its partial sum so far) to the next core,
    // receive chunk rank-2-s from the previous one and add it in; after
    // cores-1 steps the last chunk received, rank's own, is complete.
    for (int s = 0; s + 1 < l.cores; ++s) {
      const auto i = static_cast<std::uint32_t>(s);
      const Tile slot = slot_of(i);
      if (run > 0) {
        // The previous run's add has read my slot: the previous core may refill it,
        // once the next core says the same of its slot.
        kb.signal_core(l.at(-1), free_[i], slot);
        kb.wait_core(free_[i], run, slot, l.at(1));
      }
      kb.dma_to_core(l.at(1), slot, chunk(data, l, l.at(-1 - s)), arrived_[i]);
      kb.wait_core(arrived_[i], run + 1, slot, -1, arch::Engine::Vector);
      const Tile mine = chunk(data, l, l.at(-2 - s));
      kb.tensor_tensor(mine, mine, slot, arch::AluOp::Add);
    }
    return;
  }
  // Direct: every core sends chunk k to core k, into its slot there.
  if (run > 0) {
    for (int k = 1; k < l.cores; ++k) kb.signal_core(l.at(k), free_[0], recv_);
    for (int k = 1; k < l.cores; ++k) kb.wait_core(free_[0], run * (n - 1), recv_, l.at(k));
  }
  for (int k = 1; k < l.cores; ++k)
    kb.dma_to_core(l.at(k), slot_of(static_cast<std::uint32_t>(l.rank)), chunk(data, l, l.at(k)), arrived_[0]);
  kb.wait_core(arrived_[0], (run + 1) * (n - 1), recv_, -1, arch::Engine::Vector);
  const Tile mine = chunk(data, l, l.rank);
  for (int k = 1; k < l.cores; ++k)
    kb.tensor_tensor(mine, mine, slot_of(static_cast<std::uint32_t>(l.at(k))), arch::AluOp::Add);
}

void reduce_scatter(KernelBuilder& kb, const Tile& data, Algorithm algorithm, const std::string& name) {
  layout(kb, data, "reduce_scatter");
  ReduceScatter(kb, data.partitions, data.free, algorithm, name)(data);
}

AllGather::AllGather(KernelBuilder& kb, Algorithm algorithm, const std::string& name)
    : kb_(kb), algorithm_(algorithm), name_(name) {
  const int cores = kb.spmd().grid;
  if (cores == 1) return;
  ready_ = kb.core_semaphore(name + " ready");
  if (algorithm == Algorithm::Ring)
    for (int s = 0; s + 1 < cores; ++s) arrived_.push_back(kb.core_semaphore(fmt::format("{} step {}", name, s)));
  else
    arrived_.push_back(kb.core_semaphore(name + " arrived"));
}

void AllGather::operator()(const Tile& data) {
  const Layout l = layout(kb_, data, "all_gather");
  if (l.cores == 1) return;
  KernelBuilder& kb = kb_;
  kb.collective_label(name_ + " all-gather");
  const auto n = static_cast<std::uint32_t>(l.cores);
  const std::uint32_t run = runs_++;
  // Each core tells the cores that write into it that everything it did
  // with its tile so far is done, and waits until the cores it writes into
  // have said the same (this run's time: the counts run on).
  const auto await_ready = [&](const std::vector<int>& writers, const std::vector<int>& targets) {
    for (int w : writers) kb.signal_core(w, ready_, data);
    const auto expected = (run + 1) * static_cast<std::uint32_t>(writers.size());
    for (int t : targets) kb.wait_core(ready_, expected, data, t);
  };
  if (algorithm_ == Algorithm::Ring) {
    // Step s: send chunk rank-s (its own, then the one just received) into
    // the next core's tile; receive chunk rank-1-s from the previous one.
    await_ready({l.at(-1)}, {l.at(1)});
    for (int s = 0; s + 1 < l.cores; ++s) {
      const Tile out = chunk(data, l, l.at(-s));
      kb.dma_to_core(l.at(1), out, out, arrived_[static_cast<std::size_t>(s)]);
      kb.wait_core(arrived_[static_cast<std::size_t>(s)], run + 1, chunk(data, l, l.at(-1 - s)));
    }
    return;
  }
  std::vector<int> others;
  for (int k = 1; k < l.cores; ++k) others.push_back(l.at(k));
  await_ready(others, others);
  const Tile mine = chunk(data, l, l.rank);
  for (int k : others) kb.dma_to_core(k, mine, mine, arrived_[0]);
  kb.wait_core(arrived_[0], (run + 1) * (n - 1), data);
}

AllReduce::AllReduce(KernelBuilder& kb, std::uint32_t partitions, std::uint32_t columns, Algorithm algorithm,
                     const std::string& name)
    : reduce_scatter_(kb, partitions, columns, algorithm, name + " rs"), all_gather_(kb, algorithm, name + " ag") {}

void AllReduce::operator()(const Tile& data) {
  reduce_scatter_(data);
  all_gather_(data);
}

void all_gather(KernelBuilder& kb, const Tile& data, Algorithm algorithm, const std::string& name) {
  layout(kb, data, "all_gather");
  AllGather(kb, algorithm, name)(data);
}

void all_reduce(KernelBuilder& kb, const Tile& data, Algorithm algorithm, const std::string& name) {
  layout(kb, data, "all_reduce");
  AllReduce(kb, data.partitions, data.free, algorithm, name)(data);
}

}  // namespace tessera::kernels::collectives
