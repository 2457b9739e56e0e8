#!/usr/bin/env python3
"""The DMA hardware contract, defined once: descriptor layout, flags, error
codes and register map. Generates the SystemVerilog package used by the RTL
(rtl/dma/tsr_dma_pkg.sv) and the C++ header used by tests, driver and SystemC
models (systemc_models/arch/dma_descriptor.h). Both outputs are checked in so
that lint and IDEs see them; the CTest test `rtl.dma.contract_in_sync` runs
this script with --check and fails if either file differs from the table.

Usage: gen_dma_contract.py [--check] [--markdown] REPO_ROOT
"""
import argparse
import pathlib
import sys

DESC_BYTES = 64
MAGIC = 0xD5

# (name, bits, count, description). Packed little-endian from bit 0 of byte 0
# in this order; an array field occupies count consecutive slots of `bits`.
DESC_FIELDS = [
    ("src_addr", 48, 1, "Source byte address of element (0,0,0,0)"),
    ("dst_addr", 48, 1, "Destination byte address of element (0,0,0,0)"),
    ("sem_addr", 48, 1, "Semaphore address (4-byte aligned) incremented on completion"),
    ("sem_value", 16, 1, "Increment written to sem_addr when FLAG_COMPLETION is set"),
    ("src_size", 16, 4, "Source pattern: elements per dimension, dim 0 innermost; 1 for an unused dimension"),
    ("dst_size", 16, 4, "Destination pattern: elements per dimension, dim 0 innermost"),
    ("src_stride", 24, 4, "Source pattern: byte stride of each dimension"),
    ("dst_stride", 24, 4, "Destination pattern: byte stride of each dimension"),
    ("elem_log2", 4, 1, "Element size is 2^elem_log2 bytes (1 B .. 32 KiB)"),
    ("flags", 4, 1, "FLAG_* bits"),
    ("magic", 8, 1, "Must be 0xD5: tells a written descriptor from stale ring memory"),
    ("status", 16, 1, "Written back by the engine: bit 0 done, bits 15:8 error code"),
]

FLAGS = [
    ("LAST", 0, "Last descriptor of a transfer: sets the queue's LAST_SEEN status bit when done"),
    ("BARRIER", 1, "Do not read until every earlier write of this engine is acknowledged"),
    ("COMPLETION", 2, "After every write of this descriptor is acknowledged, write sem_value to sem_addr"),
]

STATUS_DONE_BIT = 0
STATUS_CODE_LSB = 8

ERRORS = [
    ("NONE", 0, "No error"),
    ("FETCH", 1, "AXI error response while fetching the descriptor"),
    ("MAGIC", 2, "Descriptor magic byte is not 0xD5 (ring not written, or stale)"),
    ("MALFORMED", 3, "Reserved flag bit set, element counts of the two sides differ, total >= 4 GiB, or sem_addr unaligned"),
    ("ZERO_LENGTH", 4, "A dimension size is 0"),
    ("ADDR_WINDOW", 5, "Source, destination, semaphore or ring address outside the configured window"),
    ("READ_RESP", 6, "SLVERR or DECERR on a data read; nothing read by the failing burst or after it is written"),
    ("WRITE_RESP", 7, "SLVERR or DECERR on a write; for a data write the descriptor's semaphore and DONE status are not written"),
    ("RING", 8, "Ring misconfigured: SIZE is 0, base not 64-byte aligned, or the fetch pointer or TAIL >= SIZE"),
]

# Register map: 32-bit registers on a simple request/response port.
# (name, offset, access, reset, description)
GLOBAL_REGS = [
    ("ID", 0x000, "RO", "0x54444D41", "Reads 'TDMA'"),
    ("PARAMS", 0x004, "RO", "-", "[7:0] queues, [15:8] data bytes, [23:16] max outstanding"),
    ("CTRL", 0x008, "RW", "0", "[0] engine enable; [15:8] read outstanding limit, [23:16] write outstanding limit (0 = parameter maximum); [31:24] run gap: a burst that starts a contiguous run issues at least this many cycles after the previous run start of its side (0 or 1 = no limit)"),
    ("STATUS", 0x00C, "RO", "0", "[0] busy (a descriptor active, a transaction outstanding, or a run gap or the descriptor gap counting down)"),
    ("WIN_BASE_LO", 0x010, "RW", "0", "Address window base, bits 31:0"),
    ("WIN_BASE_HI", 0x014, "RW", "0", "Address window base, bits 47:32"),
    ("WIN_LIMIT_LO", 0x018, "RW", "0", "Address window limit (exclusive), bits 31:0"),
    ("WIN_LIMIT_HI", 0x01C, "RW", "0", "Address window limit (exclusive), bits 47:32"),
    ("CNT_CLEAR", 0x020, "WO", "-", "Write any value: clear every performance counter"),
    ("TIMING", 0x024, "RW", "0", "[15:0] descriptor gap: a descriptor's first write burst issues at least this many cycles after the previous descriptor's last data beat on W (0 or 1 = no limit)"),
    ("BYTES_RD_LO", 0x040, "RO", "0", "Bytes read into the data buffer (saturating, 64 bit)"),
    ("BYTES_RD_HI", 0x044, "RO", "0", ""),
    ("BYTES_WR_LO", 0x048, "RO", "0", "Bytes written by data bursts (saturating, 64 bit)"),
    ("BYTES_WR_HI", 0x04C, "RO", "0", ""),
    ("DESC_DONE_LO", 0x050, "RO", "0", "Descriptors completed without error (HEAD advances)"),
    ("DESC_DONE_HI", 0x054, "RO", "0", ""),
    ("BUSY_CYCLES_LO", 0x058, "RO", "0", "Cycles with STATUS.busy set"),
    ("BUSY_CYCLES_HI", 0x05C, "RO", "0", ""),
    ("STALL_CYCLES_LO", 0x060, "RO", "0", "Busy cycles in which neither an R nor a W data beat was transferred"),
    ("STALL_CYCLES_HI", 0x064, "RO", "0", ""),
]
QUEUE_BASE = 0x100
QUEUE_STRIDE = 0x20
QUEUE_REGS = [
    ("Q_BASE_LO", 0x00, "RW", "0", "Ring base address bits 31:0 (64-byte aligned)"),
    ("Q_BASE_HI", 0x04, "RW", "0", "Ring base address bits 47:32"),
    ("Q_SIZE", 0x08, "RW", "0", "Ring size in descriptors (24 bits)"),
    ("Q_HEAD", 0x0C, "RW", "0", "Next descriptor to complete: advances when a descriptor's writes are acknowledged and its status is issued. A write (only while the queue is disabled or stopped) also moves the fetch pointer"),
    ("Q_TAIL", 0x10, "RW", "0", "Doorbell: one past the last posted descriptor; the queue is ready while its fetch pointer != TAIL"),
    ("Q_CTRL", 0x14, "RW", "0", "[0] enable; writing [1]=1 clears the error and LAST_SEEN and restarts fetching at HEAD"),
    ("Q_STATUS", 0x18, "RO", "0", "[0] active (a descriptor of this queue is running or completing), [1] error, [2] LAST_SEEN, [15:8] error code"),
    ("Q_ERR_INFO", 0x1C, "RO", "0", "Ring index of the descriptor that failed"),
]


def layout():
    pos = 0
    out = []
    for name, bits, count, desc in DESC_FIELDS:
        for i in range(count):
            # pack/unpack move each field as one 64-bit word
            assert (pos + i * bits) % 8 + bits <= 64, name
        out.append((name, bits, count, pos, desc))
        pos += bits * count
    assert pos == DESC_BYTES * 8, pos
    return out


def flag_bits():
    return next(bits for name, bits, _, _ in DESC_FIELDS if name == "flags")


def flags_known():
    return sum(1 << bit for _, bit, _ in FLAGS)


def gen_sv():
    lines = [
        "// Generated by rtl/dma/gen_dma_contract.py; do not edit.",
        "// DMA descriptor layout, flags, error codes and register map shared with",
        "// the C++ header systemc_models/arch/dma_descriptor.h.",
        "package tsr_dma_pkg;",
        "",
        f"  localparam int unsigned DescBytes = {DESC_BYTES};",
        f"  localparam logic [7:0] DescMagic = 8'h{MAGIC:02X};",
        "",
        "  // One descriptor; the first listed field sits at bit 0 of byte 0.",
        "  typedef struct packed {",
    ]
    for name, bits, count, lsb, desc in reversed(layout()):
        if count == 1:
            lines.append(f"    logic [{bits - 1}:0] {name};  // {desc}")
        else:
            lines.append(f"    logic [{count - 1}:0][{bits - 1}:0] {name};  // {desc}")
    lines.append("  } desc_t;")
    lines.append("")
    for name, bit, desc in FLAGS:
        lines.append(f"  localparam int unsigned Flag{name.title()}Bit = {bit};  // {desc}")
    lines.append(f"  localparam logic [{flag_bits() - 1}:0] FlagsKnown = {flag_bits()}'h{flags_known():X};  // any other flag bit is reserved: MALFORMED")
    lines.append(f"  localparam int unsigned StatusDoneBit = {STATUS_DONE_BIT};")
    lines.append(f"  localparam int unsigned StatusCodeLsb = {STATUS_CODE_LSB};")
    for name, _, _, lsb, _ in layout():
        if name == "status":
            lines.append(f"  localparam int unsigned DescStatusByte = {lsb // 8};")
    lines.append("")
    lines.append("  typedef enum logic [7:0] {")
    body = []
    for name, code, desc in ERRORS:
        camel = "".join(p.title() for p in name.split("_"))
        body.append(f"    Err{camel} = 8'd{code}")
    lines.append(",\n".join(body))
    lines.append("  } err_e;")
    lines.append("")
    for name, off, _, _, desc in GLOBAL_REGS + QUEUE_REGS:
        camel = "".join(p.title() for p in name.split("_"))
        lines.append(f"  localparam logic [11:0] Reg{camel} = 12'h{off:03X};")
    lines.append(f"  localparam logic [11:0] RegQueueBase = 12'h{QUEUE_BASE:03X};")
    lines.append(f"  localparam int unsigned RegQueueStride = {QUEUE_STRIDE};")
    lines.append("")
    lines.append("endpackage")
    return "\n".join(lines) + "\n"


def cxx_type(bits):
    for t in (8, 16, 32, 64):
        if bits <= t:
            return f"std::uint{t}_t"
    raise ValueError(bits)


def gen_cxx():
    L = [
        "// Generated by rtl/dma/gen_dma_contract.py; do not edit.",
        "// The DMA engine's descriptor format, flags, error codes and register map,",
        "// from the same table as the RTL package rtl/dma/tsr_dma_pkg.sv.",
        "// See docs/dma.md for the semantics.",
        "#pragma once",
        "",
        "#include <array>",
        "#include <cstdint>",
        "#include <cstring>",
        "",
        "namespace tessera::arch {",
        "",
        f"inline constexpr std::uint32_t kDmaDescriptorBytes = {DESC_BYTES};",
        f"inline constexpr std::uint8_t kDmaDescriptorMagic = 0x{MAGIC:02X};",
        f"inline constexpr unsigned kDmaStatusDoneBit = {STATUS_DONE_BIT};",
        f"inline constexpr unsigned kDmaStatusCodeLsb = {STATUS_CODE_LSB};",
        "",
        "enum DmaFlag : std::uint8_t {",
    ]
    for name, bit, desc in FLAGS:
        L.append(f"  kDmaFlag{name.title()} = 1u << {bit},  // {desc}")
    L.append("};")
    L.append(f"// Every defined flag; any other flag bit is reserved and makes a descriptor MALFORMED.")
    L.append(f"inline constexpr std::uint8_t kDmaFlagsKnown = 0x{flags_known():X};")
    L.append("")
    L.append("enum class DmaError : std::uint8_t {")
    for name, code, desc in ERRORS:
        camel = "".join(p.title() for p in name.split("_"))
        L.append(f"  k{camel} = {code},  // {desc}")
    L.append("};")
    L.append("")
    L.append("inline const char* to_string(DmaError e) {")
    L.append("  switch (e) {")
    for name, code, desc in ERRORS:
        camel = "".join(p.title() for p in name.split("_"))
        L.append(f'    case DmaError::k{camel}: return "{name.lower()}";')
    L.append("  }")
    L.append('  return "unknown";')
    L.append("}")
    L.append("")
    L.append("// Register offsets on the engine's register port (32-bit registers).")
    L.append("namespace dma_reg {")
    for name, off, acc, rst, desc in GLOBAL_REGS:
        camel = "".join(p.title() for p in name.split("_"))
        L.append(f"inline constexpr std::uint32_t k{camel} = 0x{off:03X};  // {acc}. {desc}".rstrip(" .") )
    L.append(f"inline constexpr std::uint32_t kQueueBase = 0x{QUEUE_BASE:03X};")
    L.append(f"inline constexpr std::uint32_t kQueueStride = 0x{QUEUE_STRIDE:02X};")
    for name, off, acc, rst, desc in QUEUE_REGS:
        camel = "".join(p.title() for p in name.split("_"))
        L.append(f"inline constexpr std::uint32_t k{camel} = 0x{off:02X};  // {acc}. {desc}")
    L.append("inline constexpr std::uint32_t queue(std::uint32_t q, std::uint32_t reg) {")
    L.append("  return kQueueBase + q * kQueueStride + reg;")
    L.append("}")
    L.append("}  // namespace dma_reg")
    L.append("")
    L.append("struct DmaDescriptor {")
    for name, bits, count, lsb, desc in layout():
        t = cxx_type(bits)
        L.append(f"  // {desc} ({bits} bits)")
        if count == 1:
            L.append(f"  {t} {name} = 0;")
        else:
            L.append(f"  std::array<{t}, {count}> {name}{{}};")
    L.append("};")
    L.append("")
    L.append("namespace dma_detail {")
    L.append("// A field spans at most 8 bytes (start bit within its byte + width <= 64), so it")
    L.append("// is moved as one 64-bit word assembled from those bytes, not bit by bit. On a")
    L.append("// little-endian host a field whose 8 bytes from its first lie inside the")
    L.append("// descriptor is that word read straight from memory: the DMA engine unpacks")
    L.append("// every descriptor it fetches, and the byte loop was most of the cost.")
    L.append("constexpr std::uint64_t field_mask(unsigned bits) { return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1; }")
    L.append("constexpr unsigned field_bytes(unsigned lsb, unsigned bits) { return (lsb % 8 + bits + 7) / 8; }")
    L.append("constexpr bool whole_word(unsigned lsb) {")
    L.append("#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__")
    L.append("  return lsb / 8 + 8 <= kDmaDescriptorBytes;")
    L.append("#else")
    L.append("  return (void)lsb, false;")
    L.append("#endif")
    L.append("}")
    L.append("inline void put_bits(std::array<std::uint8_t, kDmaDescriptorBytes>& b, unsigned lsb,")
    L.append("                     unsigned bits, std::uint64_t v) {")
    L.append("  const unsigned first = lsb / 8, shift = lsb % 8;")
    L.append("  const std::uint64_t mask = field_mask(bits) << shift, value = (v << shift) & mask;")
    L.append("  if (whole_word(lsb)) {")
    L.append("    std::uint64_t w;")
    L.append("    std::memcpy(&w, b.data() + first, 8);")
    L.append("    w = (w & ~mask) | value;")
    L.append("    std::memcpy(b.data() + first, &w, 8);")
    L.append("    return;")
    L.append("  }")
    L.append("  for (unsigned i = 0; i < field_bytes(lsb, bits); ++i) {")
    L.append("    const auto keep = static_cast<std::uint8_t>(~(mask >> (8 * i)));")
    L.append("    b[first + i] = static_cast<std::uint8_t>((b[first + i] & keep) | (value >> (8 * i)));")
    L.append("  }")
    L.append("}")
    L.append("inline std::uint64_t get_bits(const std::array<std::uint8_t, kDmaDescriptorBytes>& b,")
    L.append("                              unsigned lsb, unsigned bits) {")
    L.append("  const unsigned first = lsb / 8;")
    L.append("  std::uint64_t w = 0;")
    L.append("  if (whole_word(lsb)) std::memcpy(&w, b.data() + first, 8);")
    L.append("  else")
    L.append("    for (unsigned i = 0; i < field_bytes(lsb, bits); ++i) w |= std::uint64_t{b[first + i]} << (8 * i);")
    L.append("  return (w >> (lsb % 8)) & field_mask(bits);")
    L.append("}")
    L.append("}  // namespace dma_detail")
    L.append("")
    L.append("// Bits above a field's width are dropped, as the hardware would see them.")
    L.append("inline std::array<std::uint8_t, kDmaDescriptorBytes> pack(const DmaDescriptor& d) {")
    L.append("  std::array<std::uint8_t, kDmaDescriptorBytes> b{};")
    for name, bits, count, lsb, desc in layout():
        if count == 1:
            L.append(f"  dma_detail::put_bits(b, {lsb}, {bits}, d.{name});")
        else:
            L.append(f"  for (unsigned i = 0; i < {count}; ++i) dma_detail::put_bits(b, {lsb} + i * {bits}, {bits}, d.{name}[i]);")
    L.append("  return b;")
    L.append("}")
    L.append("")
    L.append("inline DmaDescriptor unpack(const std::array<std::uint8_t, kDmaDescriptorBytes>& b) {")
    L.append("  DmaDescriptor d;")
    for name, bits, count, lsb, desc in layout():
        t = cxx_type(bits)
        if count == 1:
            L.append(f"  d.{name} = static_cast<{t}>(dma_detail::get_bits(b, {lsb}, {bits}));")
        else:
            L.append(f"  for (unsigned i = 0; i < {count}; ++i) d.{name}[i] = static_cast<{t}>(dma_detail::get_bits(b, {lsb} + i * {bits}, {bits}));")
    L.append("  return d;")
    L.append("}")
    L.append("")
    L.append("// Byte offset of the status field inside a descriptor (the engine writes it back).")
    for name, bits, count, lsb, desc in layout():
        if name == "status":
            L.append(f"inline constexpr std::uint32_t kDmaStatusOffset = {lsb // 8};")
    L.append("")
    L.append("}  // namespace tessera::arch")
    return "\n".join(L) + "\n"


def gen_markdown():
    out = ["| field | bits | byte.bit | meaning |", "|---|---|---|---|"]
    for name, bits, count, lsb, desc in layout():
        span = f"{bits}" if count == 1 else f"{count} x {bits}"
        out.append(f"| `{name}` | {span} | {lsb // 8}.{lsb % 8} | {desc} |")
    out += ["", "| flag | bit | meaning |", "|---|---|---|"]
    out += [f"| {n} | {b} | {d} |" for n, b, d in FLAGS]
    out += ["", "| code | name | meaning |", "|---|---|---|"]
    out += [f"| {c} | {n} | {d} |" for n, c, d in ERRORS]
    out += ["", "| offset | register | access | reset | meaning |", "|---|---|---|---|---|"]
    out += [f"| 0x{o:03X} | {n} | {a} | {r} | {d} |" for n, o, a, r, d in GLOBAL_REGS]
    out += [f"| 0x{QUEUE_BASE:03X} + q*0x{QUEUE_STRIDE:02X} + 0x{o:02X} | {n} | {a} | {r} | {d} |"
            for n, o, a, r, d in QUEUE_REGS]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("root")
    args = ap.parse_args()
    if args.markdown:
        sys.stdout.write(gen_markdown())
        return 0
    root = pathlib.Path(args.root)
    outputs = {
        root / "rtl/dma/tsr_dma_pkg.sv": gen_sv(),
        root / "systemc_models/arch/dma_descriptor.h": gen_cxx(),
    }
    stale = []
    for path, text in outputs.items():
        current = path.read_text() if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(str(path))
        else:
            path.write_text(text)
    if stale:
        print("out of date with rtl/dma/gen_dma_contract.py (re-run it): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
