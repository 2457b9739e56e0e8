#include "core/semaphores.h"
#include "trace/sim_time.h"

#include <fmt/format.h>

#include <cstring>

namespace tessera::core {

Semaphores::SemaphoreStats::SemaphoreStats(trace::Stats& stats, const sc_core::sc_object& owner)
    : Group(stats, owner),
      increments(*this, "increments", "count", "semaphore increments"),
      waits(*this, "waits", "count", "semaphore waits that blocked") {}

Semaphores::Semaphores(sc_core::sc_module_name name, std::size_t count, sc_core::sc_time wake_latency,
                       trace::Stats& stats)
    : sc_module(name),
      socket("socket"),
      values_(count, 0),
      value_before_(count, 0),
      changed_at_(count, sc_core::sc_max_time()),
      wake_latency_(wake_latency),
      stats_(stats, *this) {
  socket.register_b_transport(this, &Semaphores::b_transport);
  SC_METHOD(apply_due);
  sensitive << delayed_event_;
  dont_initialize();
}

void Semaphores::increment_at(std::size_t index, std::uint32_t delta, const sc_core::sc_time& when) {
  if (index >= values_.size()) throw std::out_of_range("semaphore index");
  const sc_core::sc_time now = trace::current_time();
  if (when <= now) return increment(index, delta);
  delayed_.push({when, arrivals_++, index, delta});
  delayed_event_.notify(when - now);  // an earlier pending notification wins; apply_due re-arms
}

void Semaphores::apply_due() {
  const sc_core::sc_time now = trace::current_time();
  while (!delayed_.empty() && delayed_.top().when <= now) {
    const Delayed due = delayed_.top();
    delayed_.pop();
    increment(due.index, due.delta);
  }
  if (!delayed_.empty()) delayed_event_.notify(delayed_.top().when - now);
}

void Semaphores::increment(std::size_t index, std::uint32_t delta) {
  const sc_core::sc_time now = trace::current_time();
  if (changed_at_.at(index) != now) {
    changed_at_[index] = now;
    value_before_[index] = values_[index];
  }
  values_[index] += delta;
  ++stats_.increments;
  if (keep_increments_) increment_log_.push_back({static_cast<std::uint32_t>(index), delta, now});
  if (waves_) waves_->semaphore(index, values_[index]);
  changed_.notify(sc_core::SC_ZERO_TIME);
}

std::uint32_t Semaphores::visible_value(std::size_t index) const {
  return changed_at_.at(index) == trace::current_time() ? value_before_[index] : values_[index];
}

void Semaphores::wait_at_least(std::size_t index, std::uint32_t target, const std::string& who) {
  if (visible_value(index) >= target) return;
  ++stats_.waits;
  waiting_[who] = {index, target};
  // Reached by an increment earlier in this picosecond: woken by it, as when
  // the increment comes later in the picosecond.
  while (values_[index] < target) sc_core::wait(changed_);
  waiting_.erase(who);
  sc_core::wait(wake_latency_);
}

std::vector<std::string> Semaphores::blocked_waiters() const {
  std::vector<std::string> out;
  for (const auto& [who, w] : waiting_)
    out.push_back(fmt::format("{}: sem[{}] >= {} (value now {})", who, w.index, w.target, values_[w.index]));
  return out;
}

// A 32-bit write to a semaphore's register adds the written value; a read
// returns the current value.
void Semaphores::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const std::uint64_t index = trans.get_address() / 4;
  if (trans.get_address() % 4 != 0 || trans.get_data_length() != 4 || index >= values_.size()) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  std::uint32_t v = 0;
  if (trans.is_write()) {
    std::memcpy(&v, trans.get_data_ptr(), 4);
    increment_at(index, v, trace::current_time() + delay);
  } else {
    v = values_[index];
    std::memcpy(trans.get_data_ptr(), &v, 4);
  }
  delay += wake_latency_;
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tessera::core
