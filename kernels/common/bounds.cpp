#include "common/bounds.h"

#include "arch/formats.h"
#include "arch/numerics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace tessera::kernels {

double unit_roundoff(DType t) {
  switch (t) {
    case DType::Fp32: return std::ldexp(1.0, -24);
    case DType::Bf16: return std::ldexp(1.0, -8);
    case DType::Fp8E4m3: return std::ldexp(1.0, -4);
    case DType::Fp8E5m2: return std::ldexp(1.0, -3);
    default: throw std::invalid_argument(fmt::format("no unit roundoff for {}", to_string(t)));
  }
}

double absolute_roundoff(DType t) {
  switch (t) {
    case DType::Fp32:
    case DType::Bf16: return kMinNormalFp32;
    case DType::Fp8E4m3: return std::ldexp(1.0, -10);
    case DType::Fp8E5m2: return std::ldexp(1.0, -17);
    default: throw std::invalid_argument(fmt::format("no absolute roundoff for {}", to_string(t)));
  }
}

float held_value(DType t, float v) {
  switch (t) {
    case DType::Bf16: return arch::to_float(arch::to_bf16(v));
    case DType::Fp8E4m3: return arch::fp8_e4m3_value(arch::to_fp8_e4m3(v));
    case DType::Fp8E5m2: return arch::fp8_e5m2_value(arch::to_fp8_e5m2(v));
    default: return v;
  }
}

double gamma(std::int64_t n, double u) {
  const double nu = static_cast<double>(n) * u;
  return nu < 1 ? nu / (1 - nu) : INFINITY;
}

NumericsCheck check_within(const std::vector<float>& got, const std::vector<double>& expect,
                           const std::vector<double>& bound, const std::function<std::string(std::size_t)>& where) {
  if (got.size() != expect.size() || bound.size() != expect.size()) {
    NumericsCheck c;
    c.detail = fmt::format("{} results for {} expected", got.size(), expect.size());
    return c;
  }
  WorstElement worst;
  for (std::size_t i = 0; i < got.size(); ++i) worst.add(i, got[i], expect[i], bound[i]);
  return worst.result(where);
}

NumericsCheck WorstElement::result(const std::function<std::string(std::size_t)>& where) const {
  NumericsCheck c;
  if (ratio_ < 0) {
    c.correct = true;
    return c;
  }
  c.max_abs_error = std::isnan(got_) ? INFINITY : std::fabs(double{got_} - expect_);
  c.tolerance = bound_;
  c.correct = ratio_ <= 1.0;
  if (!c.correct) c.detail = fmt::format("{} = {}, reference {}, bound {:.3g}", where(index_), got_, expect_, bound_);
  return c;
}

std::size_t check_threads() {
  if (const char* env = std::getenv("TESSERA_CHECK_THREADS"); env && *env) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (*end != '\0' || n < 1)
      throw std::invalid_argument(fmt::format("TESSERA_CHECK_THREADS={}: expected a whole number of threads, 1 or more", env));
    return static_cast<std::size_t>(n);
  }
#if defined(__linux__)
  // The CPUs this process may run on (a batch scheduler's task gets a few
  // of the node's), not all the host has.
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 0)
    return static_cast<std::size_t>(CPU_COUNT(&cpus));
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

WorstElement worst_over_blocks(std::size_t blocks,
                               const std::function<void(std::size_t, std::size_t, WorstElement&)>& check) {
  const std::size_t threads = std::min(blocks, check_threads());
  if (threads <= 1) {
    WorstElement worst;
    if (blocks > 0) check(0, blocks, worst);
    return worst;
  }
  std::vector<WorstElement> worst(threads);
  std::vector<std::exception_ptr> failed(threads);
  const auto range = [&](std::size_t t) {
    // Contiguous, and as even as whole blocks allow.
    const std::size_t first = blocks * t / threads, last = blocks * (t + 1) / threads;
    try {
      check(first, last, worst[t]);
    } catch (...) {
      failed[t] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (std::size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(range, t);
    } catch (...) {
      range(t);  // no thread to be had (system_error, bad_alloc): this one takes the range
    }
  }
  range(0);  // the calling thread takes the first range
  for (auto& th : pool) th.join();
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
  for (std::size_t t = 1; t < threads; ++t) worst[0].merge(worst[t]);
  return worst[0];
}

std::vector<float> random_values(std::size_t n, float lo, float hi, DType t, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = dist(rng);
    x = held_value(t, x);
  }
  return v;
}

}  // namespace tessera::kernels
