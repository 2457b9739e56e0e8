// Writes the seed corpora of the ISA and DMA descriptor fuzzers (binary
// encodings, so they are made from the encoders rather than kept as files):
// one instruction of each opcode's common shapes, and valid and malformed
// descriptors.
#include "arch/dma_descriptor.h"
#include "arch/isa.h"

#include <filesystem>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  using namespace tessera::arch;
  if (argc != 3) return 2;
  const std::filesystem::path isa = argv[1], dma = argv[2];
  std::filesystem::create_directories(isa);
  std::filesystem::create_directories(dma);
  const auto write = [](const std::filesystem::path& p, const std::vector<std::uint8_t>& b) {
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<long>(b.size()));
  };
  int n = 0;
  std::vector<std::uint8_t> all;
  for (int op = 0; op < 32; ++op)
    for (int engine = 0; engine < kNumEngines; ++engine) {
      Instruction in;
      in.engine = static_cast<Engine>(engine);
      in.opcode = static_cast<Opcode>(op);
      if (!runs_on(in.opcode, in.engine)) continue;
      in.dst = tile(Memory::Sbuf, DType::Fp32, 0, 8, 0, 64);
      in.a = tile(Memory::Sbuf, DType::Bf16, 0, 8, 1024, 64);
      in.sem = 3;
      in.value = 1;
      try {
        const auto bytes = encode(in);
        write(isa / ("op" + std::to_string(n++)), bytes);
        all.insert(all.end(), bytes.begin(), bytes.end());
      } catch (const std::exception&) {
      }
    }
  write(isa / "stream", all);
  DmaDescriptor d;
  d.src_addr = 0x1000;
  d.dst_addr = 0x1000'0000'0000ull;
  d.src_size = {64, 8, 1, 1};
  d.dst_size = {64, 8, 1, 1};
  d.src_stride = {1, 64, 512, 512};
  d.dst_stride = {1, 64, 512, 512};
  d.elem_log2 = 1;
  d.magic = kDmaDescriptorMagic;
  const auto packed = pack(d);
  write(dma / "valid", std::vector<std::uint8_t>(packed.begin(), packed.end()));
  d.flags = 0xf;
  d.src_size = {0, 1, 1, 1};
  const auto bad = pack(d);
  write(dma / "malformed", std::vector<std::uint8_t>(bad.begin(), bad.end()));
  return 0;
}
