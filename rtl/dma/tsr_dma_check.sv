// DMA descriptor check: the decode rules, in the order the engine applies
// them, as one error code (ErrNone when the descriptor may run). The same
// rules, in the same order, are arch::check in
// systemc_models/arch/dma_descriptor.h; docs/dma.md lists them.
module tsr_dma_check
  import tsr_dma_pkg::*;
  import tsr_dma_unit_pkg::*;
(
  input  desc_t       desc_i,
  input  logic        fetch_err_i,   // the descriptor's fetch got an error response
  input  logic [47:0] win_base_i,
  input  logic [47:0] win_limit_i,
  output logic [7:0]  code_o
);
  logic [63:0] src_elems, dst_elems;
  logic [79:0] total_bytes;
  logic [63:0] src_last, dst_last;
  logic        any_zero, in_win, malformed;

  // The last byte a side touches: every dimension at its last index.
  function automatic logic [63:0] pattern_last(logic [47:0] base, logic [3:0][15:0] size,
                                               logic [3:0][23:0] stride, logic [3:0] elog2);
    logic [63:0] last;
    last = {16'b0, base} + (64'd1 << elog2) - 64'd1;
    for (int k = 0; k < 4; k++) begin
      last = last + ({48'b0, size[k]} - 64'd1) * {40'b0, stride[k]};
    end
    return last;
  endfunction

  always_comb begin
    src_elems = {48'b0, desc_i.src_size[0]} * {48'b0, desc_i.src_size[1]} *
                {48'b0, desc_i.src_size[2]} * {48'b0, desc_i.src_size[3]};
    dst_elems = {48'b0, desc_i.dst_size[0]} * {48'b0, desc_i.dst_size[1]} *
                {48'b0, desc_i.dst_size[2]} * {48'b0, desc_i.dst_size[3]};
    total_bytes = {16'b0, src_elems} << desc_i.elem_log2;
    any_zero = 1'b0;
    for (int k = 0; k < 4; k++) begin
      any_zero |= desc_i.src_size[k] == '0 || desc_i.dst_size[k] == '0;
    end
    malformed = (desc_i.flags & ~FlagsKnown) != '0 || src_elems != dst_elems ||
                total_bytes[79:32] != '0 ||
                (desc_i.flags[FlagCompletionBit] && desc_i.sem_addr[1:0] != 2'b0);
    src_last = pattern_last(desc_i.src_addr, desc_i.src_size, desc_i.src_stride, desc_i.elem_log2);
    dst_last = pattern_last(desc_i.dst_addr, desc_i.dst_size, desc_i.dst_stride, desc_i.elem_log2);
    in_win = in_window({16'b0, desc_i.src_addr}, src_last, win_base_i, win_limit_i) &&
             in_window({16'b0, desc_i.dst_addr}, dst_last, win_base_i, win_limit_i) &&
             (!desc_i.flags[FlagCompletionBit] ||
              in_window({16'b0, desc_i.sem_addr}, {16'b0, desc_i.sem_addr} + 64'd3, win_base_i,
                        win_limit_i));

    if (fetch_err_i)                    code_o = ErrFetch;
    else if (desc_i.magic != DescMagic) code_o = ErrMagic;
    else if (any_zero)                  code_o = ErrZeroLength;
    else if (malformed)                 code_o = ErrMalformed;
    else if (!in_win)                   code_o = ErrAddrWindow;
    else                                code_o = ErrNone;
  end

  // The status field is the engine's to write, and sem_value its to send.
  logic unused;
  assign unused = ^{desc_i.status, desc_i.sem_value, total_bytes[31:0]};
endmodule
