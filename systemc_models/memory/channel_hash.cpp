#include "memory/channel_hash.h"

#include <stdexcept>
#include <string>

namespace tessera::memory {
namespace {

// Primitive polynomials of degree 1 .. 8, without their x^w term (the usual
// CRC-1 parity, CRC-4-ITU's x^4 + x + 1, CRC-8's x^8 + x^4 + x^3 + x^2 + 1).
// Any P with P(0) = 1 gives the power-of-two guarantee; primitive ones also
// make the remainder of x^k cycle through every nonzero value, so pitches
// that are not powers of two spread well.
constexpr std::array<std::uint32_t, 9> kPolynomial = {0, 0x1, 0x3, 0x3, 0x3, 0x05, 0x03, 0x03, 0x1d};

}  // namespace

ChannelHash::ChannelHash(std::uint64_t channels) {
  if (channels == 0 || channels > 256 || (channels & (channels - 1)) != 0)
    throw std::invalid_argument("HBM channel hash: " + std::to_string(channels) +
                                " channels; the hash needs a power of two from 1 to 256");
  unsigned w = 0;
  while ((1ull << w) < channels) ++w;
  mask_ = static_cast<std::uint32_t>(channels - 1);
  poly_ = kPolynomial[w];
  if (w == 0) return;  // one channel: every table holds 0
  // x^j mod P for every bit j of the granule index, then each table entry is
  // the sum (XOR) of the remainders of its set bits.
  std::array<std::uint32_t, 8 * kTables> rem{};
  std::uint32_t r = 1;  // x^0
  for (std::size_t j = 0; j < rem.size(); ++j) {
    rem[j] = r;
    r <<= 1;  // times x, then reduce: x^w = P's lower terms
    if (r & (1u << w)) r = (r ^ (1u << w)) ^ poly_;
  }
  for (std::size_t k = 0; k < kTables; ++k)
    for (std::uint32_t b = 0; b < 256; ++b) {
      std::uint32_t c = 0;
      for (unsigned bit = 0; bit < 8; ++bit)
        if (b & (1u << bit)) c ^= rem[8 * k + bit];
      table_[k][b] = static_cast<std::uint8_t>(c);
    }
}

}  // namespace tessera::memory
