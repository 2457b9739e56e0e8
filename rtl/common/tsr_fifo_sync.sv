// Synchronous FIFO: Depth entries of Width bits, ready/valid on both sides,
// first-word fall-through (rdata_o shows the oldest entry while rvalid_o).
//
// Pointers carry one bit more than the index, so full and empty differ
// without a spare entry. Entries reset to 0 and rdata_o shows the slot at the
// read pointer even when the FIFO is empty, so an idle read port is defined.
module tsr_fifo_sync #(
  parameter int unsigned Width = 8,
  parameter int unsigned Depth = 4,  // power of two
  localparam int unsigned IdxW = (Depth > 1) ? $clog2(Depth) : 1,
  localparam int unsigned PtrW = $clog2(Depth) + 1
) (
  input  logic             clk_i,
  input  logic             rst_ni,

  // Write side: an entry is taken on wvalid_i && wready_o.
  input  logic             wvalid_i,
  output logic             wready_o,
  input  logic [Width-1:0] wdata_i,

  // Read side: the oldest entry leaves on rvalid_o && rready_i.
  output logic             rvalid_o,
  input  logic             rready_i,
  output logic [Width-1:0] rdata_o,

  output logic [PtrW-1:0]  depth_o   // entries held
);
  `include "tsr_assert.svh"

  logic [Depth-1:0][Width-1:0] storage_q, storage_d;
  logic [PtrW-1:0]             wptr_q, wptr_d, rptr_q, rptr_d;
  logic                        push, pop;

  logic [IdxW-1:0]             widx, ridx;  // storage slots the pointers select

  if (Depth > 1) begin : gen_index
    assign widx = wptr_q[IdxW-1:0];
    assign ridx = rptr_q[IdxW-1:0];
  end else begin : gen_single
    assign widx = '0;
    assign ridx = '0;
  end

  assign depth_o  = wptr_q - rptr_q;
  assign wready_o = depth_o != PtrW'(Depth);
  assign rvalid_o = depth_o != '0;
  assign rdata_o  = storage_q[ridx];
  assign push     = wvalid_i && wready_o;
  assign pop      = rvalid_o && rready_i;

  always_comb begin
    storage_d = storage_q;
    wptr_d    = wptr_q + PtrW'(push);
    rptr_d    = rptr_q + PtrW'(pop);
    if (push) storage_d[widx] = wdata_i;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      storage_q <= '0;
      wptr_q    <= '0;
      rptr_q    <= '0;
    end else begin
      storage_q <= storage_d;
      wptr_q    <= wptr_d;
      rptr_q    <= rptr_d;
    end
  end

  `ASSERT_INIT(DepthPow2_A, Depth >= 1 && (Depth & (Depth - 1)) == 0)
  `ASSERT_INIT(WidthNonZero_A, Width > 0)
  `ASSERT(DepthInRange_A, depth_o <= PtrW'(Depth), clk_i, rst_ni)
  `ASSERT_KNOWN(RvalidKnown_A, rvalid_o, clk_i, rst_ni)
  `ASSERT_KNOWN(WreadyKnown_A, wready_o, clk_i, rst_ni)
endmodule
