#include "dma/dma_scheduler.h"

#include "dma/dma_engine.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace tessera::dma {

using sc_core::sc_time;

DmaScheduler::DmaScheduler(sc_core::sc_module_name name, sc_time lookahead) : sc_module(name), lookahead_(lookahead) {
  SC_THREAD(run);
}

void DmaScheduler::add(DmaEngine& engine) {
  engines_.push_back(&engine);
  if (std::find(cores_.begin(), cores_.end(), &engine.ctx_) == cores_.end()) cores_.push_back(&engine.ctx_);
}

void DmaScheduler::end_of_elaboration() {
  resolution_ = sc_core::sc_get_time_resolution();
  bool wanted = true;
  if (requested_) wanted = *requested_;
  else if (const char* env = std::getenv("TESSERA_DMA_RUN_AHEAD"); env && *env) wanted = *env != '0';
  active_ = wanted && lookahead_ > sc_core::SC_ZERO_TIME;
  for (const core::CoreContext* c : cores_) active_ = active_ && !c->waves;
  for (const DmaEngine* e : engines_) active_ = active_ && !e->has_sampler();
  if (active_)
    for (std::size_t i = 0; i < engines_.size(); ++i) {
      engines_[i]->scheduler_ = this;
      engines_[i]->slot_ = i;
    }
  // Each engine's first step is at 0, where its thread would have started.
  leaves_ = 1;
  while (leaves_ < engines_.size()) leaves_ *= 2;
  slot_bits_ = static_cast<unsigned>(__builtin_ctzll(leaves_));
  slot_mask_ = leaves_ - 1;
  key_time_cap_ = ~std::uint64_t{0} >> slot_bits_;
  next_.assign(leaves_, kNever);
  std::fill(next_.begin(), next_.begin() + static_cast<std::ptrdiff_t>(engines_.size()), Time());
  winner_.assign(2 * leaves_, 0);
  for (std::size_t i = 0; i < leaves_; ++i) winner_[leaves_ + i] = key(i);
  for (std::size_t k = leaves_ - 1; k >= 1; --k) winner_[k] = std::min(winner_[2 * k], winner_[2 * k + 1]);
}

void DmaScheduler::replay(std::size_t slot) {
  std::size_t k = leaves_ + slot;
  Key best = key(slot);
  winner_[k] = best;
  for (; k > 1; k /= 2) {
    best = std::min(best, winner_[k ^ 1]);
    winner_[k / 2] = best;
  }
}

void DmaScheduler::doorbell(std::size_t slot, Time next, const sc_time& visible_after) {
  next_[slot] = next;
  replay(slot);
  if (visible_after < lookahead_)
    throw std::logic_error("DmaScheduler: a doorbell visible sooner than the lookahead");
  // The step it may wake is at now + visible_after, which the scheduler may
  // take once SystemC's time is past now (a step exactly a lookahead ahead
  // could still see a doorbell rung later at the same time).
  const Time wake = Time(trace::current_time()) + resolution_;
  if (planned_ > wake) {
    planned_ = wake;
    wake_.notify(resolution_.sc());
  }
}

void DmaScheduler::run() {
  if (!active_) return;
  const Time never = kNever;
  const Time resolution = resolution_;
  for (;;) {
    for (const core::CoreContext* c : cores_)
      if (c->error) return;
    ++wake_ups_;
    systemc_time_ = trace::current_time();
    const Time now = systemc_time_;
    // Steps before `horizon` cannot be changed by anything rung from now on.
    const Time horizon = horizon_ = now + Time(lookahead_);
    Time next = never;
    for (;;) {
      // The engine with the earliest step, the lower rank at the same time:
      // every step (and every doorbell) replays its engine's path, so the
      // root always holds it.
      const std::size_t first = slot_of(winner_[1]);
      Time& at = next_[first];
      if (at >= horizon) {
        next = at;
        break;
      }
      DmaEngine& engine = *engines_[first];
      at = engine.step_at(at);
      ++steps_;
      if (engine.now_ > reached_) reached_ = engine.now_;  // it may have moved on (DmaEngine::wait_turn)
      if (engine.ctx_.error) return;  // the run stops (sc_stop)
      replay(first);
    }
    // Wake just before the next step: SystemC's time stays behind every step
    // not yet taken, and the next wake-up's horizon is as far out as it can be.
    // With a lookahead of a picosecond that is now itself: wake a picosecond
    // on instead, or the scheduler would wake at the same time forever.
    if (next != never) planned_ = std::max(next - resolution, now + resolution);
    else planned_ = reached_ > now ? reached_ : never;
    if (planned_ == never) sc_core::wait(wake_);
    else sc_core::wait((planned_ - now).sc(), wake_);
  }
}

}  // namespace tessera::dma
