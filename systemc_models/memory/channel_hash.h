// Which HBM channel serves an address: a CRC of the address's 256-byte granule
// index, as the DMA bandwidth guide describes for Trainium's HBM ("What
// CRC-Based Hashing Does": the hash spreads traffic over every channel, where
// plain modulo interleaving "can create hot-spots when access strides align
// with the channel count").
//
// The granule index g is read as a polynomial over GF(2) and the channel is
// g mod P, P a polynomial of degree w = log2(channels) with P(0) = 1. The
// hash is linear (h(a ^ b) = h(a) ^ h(b)), which gives two guarantees the
// tests check:
// - consecutive granules: in any run of `channels` granules that starts on a
//   multiple of `channels`, every channel appears once (there g = base ^ i
//   with i < 2^w, and h(i) = i);
// - rows at a power-of-two pitch: `channels` rows 2^k granules apart (the
//   first on a multiple of 2^(k+w)) hit every channel once, because
//   i -> i * x^k mod P is a bijection when x is invertible mod P, which
//   P(0) = 1 ensures. Plain modulo puts every such row with k >= w on one
//   channel: a GEMM tile whose rows sit 8 KiB apart loaded at a quarter of
//   the packed rate on 16 channels.
// Other pitches are spread too, though not always perfectly (tested with a
// bound).
#pragma once

#include <array>
#include <cstdint>

namespace tessera::memory {

class ChannelHash {
public:
  static constexpr std::uint64_t kGranuleBytes = 256;

  // `channels` must be a power of two from 1 to 256 (the config checks it).
  explicit ChannelHash(std::uint64_t channels);

  std::uint32_t channel_of(std::uint64_t address) const { return channel_of_granule(address / kGranuleBytes); }
  std::uint32_t channel_of_granule(std::uint64_t g) const {
    std::uint32_t c = 0;
    for (std::size_t k = 0; k < kTables; ++k) c ^= table_[k][(g >> (8 * k)) & 0xff];
    return c;
  }
  std::uint32_t channels() const { return mask_ + 1; }
  // P's coefficients below x^w (bit i is the coefficient of x^i), for the docs and tests.
  std::uint32_t polynomial() const { return poly_; }

private:
  // Granule indices of 48-bit addresses fit 40 bits: five tables of one byte each.
  static constexpr std::size_t kTables = 5;
  std::uint32_t mask_ = 0, poly_ = 0;
  std::array<std::array<std::uint8_t, 256>, kTables> table_{};
};

}  // namespace tessera::memory
