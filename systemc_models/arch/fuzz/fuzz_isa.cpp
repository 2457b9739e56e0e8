// libFuzzer harness: the ISA decoder and disassembler. Any byte stream
// decodes to instructions or throws IsaError; what decodes disassembles,
// validates against a config and encodes back to bytes that decode to the
// same instruction.
#include "arch/config.h"
#include "arch/isa.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tessera::arch;
  static const ResolvedConfig tiny = load_config(TESSERA_FUZZ_CONFIG_DIR "/tiny.yaml");
  const std::vector<std::uint8_t> bytes(data, data + size);
  std::vector<Instruction> program;
  try {
    program = decode_all(bytes);
  } catch (const IsaError&) {
    return 0;
  }
  for (const Instruction& in : program) {
    (void)disassemble(in);
    (void)validate(in, tiny.hw);
    const std::vector<std::uint8_t> again = encode(in);
    std::size_t pos = 0;
    const Instruction back = decode(again, pos);
    if (encode(back) != again || disassemble(back) != disassemble(in)) {
      std::fprintf(stderr, "instruction does not round-trip: %s\n", disassemble(in).c_str());
      std::abort();
    }
  }
  (void)disassemble(bytes);
  return 0;
}
