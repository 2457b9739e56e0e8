// A byte store that allocates 64 KiB pages only when written, so a device with
// tens of GiB of HBM costs only the pages a program touches.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace tessera::memory {

class SparseStore {
public:
  static constexpr std::uint64_t kPageBytes = 64 * 1024;
  // Pages are cut from slabs of kSlabPages (2 MiB), zero when they come from
  // the system and backed by a huge page where the kernel offers them: a
  // large program's image (over 100 MiB) was faulted in 4 KiB at a time and
  // zeroed twice, by the kernel and by each page's own initialisation.
  static constexpr std::uint64_t kSlabPages = 32;

  SparseStore() = default;
  SparseStore(const SparseStore&) = delete;
  SparseStore& operator=(const SparseStore&) = delete;

  void read(std::uint64_t address, std::uint8_t* out, std::uint64_t length) const;
  void write(std::uint64_t address, const std::uint8_t* in, std::uint64_t length);
  std::uint64_t pages_allocated() const { return pages_.size(); }
  // Returns every page to the system: the store reads as zeros again.
  void clear();

private:
  static std::uint8_t* map_slab();
  std::uint8_t* new_page();
  struct FreeSlab {
    void operator()(std::uint8_t* p) const;
  };
  std::vector<std::unique_ptr<std::uint8_t, FreeSlab>> slabs_;
  std::uint64_t slab_used_ = kSlabPages;  // pages handed out of the last slab (none yet: full)
  std::unordered_map<std::uint64_t, std::uint8_t*> pages_;
};

}  // namespace tessera::memory
