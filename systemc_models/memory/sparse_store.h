// A byte store that allocates 64 KiB pages only when written, so a device with
// tens of GiB of HBM costs only the pages a program touches.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

namespace tessera::memory {

class SparseStore {
public:
  static constexpr std::uint64_t kPageBytes = 64 * 1024;

  void read(std::uint64_t address, std::uint8_t* out, std::uint64_t length) const;
  void write(std::uint64_t address, const std::uint8_t* in, std::uint64_t length);
  std::uint64_t pages_allocated() const { return pages_.size(); }

private:
  std::unordered_map<std::uint64_t, std::unique_ptr<std::uint8_t[]>> pages_;
};

}  // namespace tessera::memory
