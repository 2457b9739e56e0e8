// Live and peak heap bytes of the process, counted by replacing the global
// operator new and delete (heap_counter.cpp); for benchmarks that report the
// memory a piece of code needs, not for the library.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::bench {

struct HeapCounter {
  // Bytes now held through operator new (usable sizes, as malloc gives them).
  static std::int64_t live();
  // The most held since the last reset_peak().
  static std::int64_t peak();
  // Allocations since the start of the process.
  static std::uint64_t allocations();
  // Starts a new peak from what is held now.
  static void reset_peak();
};

}  // namespace tessera::bench
