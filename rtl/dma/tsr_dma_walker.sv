// DMA access-pattern walker: turns one side of a descriptor (base, 4 x (size,
// stride), element size) into AXI-legal bursts in pattern order.
//
// A contiguous run is one element, or a whole dimension 0 when its stride
// equals the element size. Runs are cut at MaxBurstBytes-aligned boundaries;
// MaxBurstBytes divides 4 KiB and is at most 256 beats, so no burst crosses a
// 4 KiB boundary or exceeds 256 beats.
module tsr_dma_walker #(
  parameter int unsigned MaxBurstBytes = 4096,
  localparam int unsigned BurstW = $clog2(MaxBurstBytes) + 1
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,

  // Pattern, sampled when start_i is high.
  input  logic                    start_i,
  input  logic [47:0]             base_i,
  input  logic [3:0][15:0]        size_i,
  input  logic [3:0][23:0]        stride_i,
  input  logic [3:0]              elem_log2_i,

  // Bursts in pattern order; a burst advances on valid && ready.
  output logic                    burst_valid_o,
  input  logic                    burst_ready_i,
  output logic [47:0]             burst_addr_o,
  output logic [BurstW-1:0]       burst_bytes_o,
  output logic                    burst_first_o, // the burst starts a run: first of the
                                                 // pattern, or not where the last one ended
  output logic                    done_o        // every burst handed out (or idle)
);
  logic [3:0][15:0] size_q, size_d;
  logic [3:0][23:0] stride_q, stride_d;
  logic [3:0]       elem_log2_q, elem_log2_d;
  logic             merged_q, merged_d;       // dimension 0 is one contiguous run
  logic [3:0][15:0] idx_q, idx_d;
  logic [3:1][47:0] start_q, start_d;         // start of the current sub-block of dims 1..3
  logic [47:0]      run_addr_q, run_addr_d;   // next byte of the current run
  logic [31:0]      run_rem_q, run_rem_d;     // bytes left in the current run
  logic             active_q, active_d;
  logic             begun_q, begun_d;         // a burst of this pattern was handed out
  logic [47:0]      prev_end_q, prev_end_d;   // the byte after the last burst handed out

  logic [31:0] elem_bytes;
  logic [31:0] run_bytes;
  logic [BurstW-1:0] to_boundary;
  logic [BurstW-1:0] burst_bytes;
  logic last_of_run;

  always_comb begin
    elem_bytes = 32'd1 << elem_log2_q;
    run_bytes  = merged_q ? ({16'b0, size_q[0]} << elem_log2_q) : elem_bytes;
    to_boundary = BurstW'(MaxBurstBytes) - {1'b0, run_addr_q[BurstW-2:0]};
    burst_bytes = (run_rem_q < {{(32 - BurstW){1'b0}}, to_boundary}) ? run_rem_q[BurstW-1:0] :
                                                                          to_boundary;
    last_of_run = run_rem_q == {{(32 - BurstW){1'b0}}, burst_bytes};
  end

  assign burst_valid_o = active_q;
  assign burst_addr_o  = run_addr_q;
  assign burst_bytes_o = burst_bytes;
  assign burst_first_o = run_rem_q == run_bytes && (!begun_q || run_addr_q != prev_end_q);
  assign done_o        = !active_q;

  // The address of the element at idx 0 of the current run, derived when the
  // run advances: an element run starts stride_0 after the previous one; a
  // carry into dimension k restarts every lower dimension at start of k.
  logic [47:0] elem_start_q, elem_start_d;

  always_comb begin
    size_d      = size_q;
    stride_d    = stride_q;
    elem_log2_d = elem_log2_q;
    merged_d    = merged_q;
    idx_d       = idx_q;
    start_d     = start_q;
    run_addr_d  = run_addr_q;
    run_rem_d   = run_rem_q;
    active_d    = active_q;
    elem_start_d = elem_start_q;
    begun_d      = begun_q;
    prev_end_d   = prev_end_q;

    if (start_i) begin
      size_d      = size_i;
      stride_d    = stride_i;
      elem_log2_d = elem_log2_i;
      merged_d    = {8'b0, stride_i[0]} == (32'd1 << elem_log2_i);
      idx_d       = '0;
      start_d     = {3{base_i}};
      run_addr_d  = base_i;
      elem_start_d = base_i;
      run_rem_d   = ({8'b0, stride_i[0]} == (32'd1 << elem_log2_i)) ?
                    ({16'b0, size_i[0]} << elem_log2_i) : (32'd1 << elem_log2_i);
      active_d    = 1'b1;
      begun_d     = 1'b0;
    end else if (active_q && burst_ready_i) begin
      begun_d    = 1'b1;
      prev_end_d = run_addr_q + 48'(burst_bytes);
      run_addr_d = run_addr_q + 48'(burst_bytes);
      run_rem_d  = run_rem_q - 32'(burst_bytes);
      if (last_of_run) begin
        run_rem_d = run_bytes;
        if (!merged_q && idx_q[0] + 16'd1 < size_q[0]) begin
          idx_d[0]     = idx_q[0] + 16'd1;
          elem_start_d = elem_start_q + 48'(stride_q[0]);
          run_addr_d   = elem_start_d;
        end else if (idx_q[1] + 16'd1 < size_q[1]) begin
          idx_d[0]     = '0;
          idx_d[1]     = idx_q[1] + 16'd1;
          start_d[1]   = start_q[1] + 48'(stride_q[1]);
          elem_start_d = start_d[1];
          run_addr_d   = start_d[1];
        end else if (idx_q[2] + 16'd1 < size_q[2]) begin
          idx_d[1:0]   = '0;
          idx_d[2]     = idx_q[2] + 16'd1;
          start_d[2]   = start_q[2] + 48'(stride_q[2]);
          start_d[1]   = start_d[2];
          elem_start_d = start_d[2];
          run_addr_d   = start_d[2];
        end else if (idx_q[3] + 16'd1 < size_q[3]) begin
          idx_d[2:0]   = '0;
          idx_d[3]     = idx_q[3] + 16'd1;
          start_d[3]   = start_q[3] + 48'(stride_q[3]);
          start_d[2]   = start_d[3];
          start_d[1]   = start_d[3];
          elem_start_d = start_d[3];
          run_addr_d   = start_d[3];
        end else begin
          active_d = 1'b0;
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      size_q       <= '0;
      stride_q     <= '0;
      elem_log2_q  <= '0;
      merged_q     <= 1'b0;
      idx_q        <= '0;
      start_q      <= '0;
      run_addr_q   <= '0;
      run_rem_q    <= '0;
      active_q     <= 1'b0;
      elem_start_q <= '0;
      begun_q      <= 1'b0;
      prev_end_q   <= '0;
    end else begin
      size_q       <= size_d;
      stride_q     <= stride_d;
      elem_log2_q  <= elem_log2_d;
      merged_q     <= merged_d;
      idx_q        <= idx_d;
      start_q      <= start_d;
      run_addr_q   <= run_addr_d;
      run_rem_q    <= run_rem_d;
      active_q     <= active_d;
      elem_start_q <= elem_start_d;
      begun_q      <= begun_d;
      prev_end_q   <= prev_end_d;
    end
  end

  `include "tsr_assert.svh"
  `ASSERT_INIT(MaxBurstPow2_A, (MaxBurstBytes & (MaxBurstBytes - 1)) == 0)
  `ASSERT_INIT(MaxBurstWithin4K_A, MaxBurstBytes <= 4096)
  `ASSERT(BurstNonZero_A, !burst_valid_o || burst_bytes_o != '0, clk_i, rst_ni)
  `ASSERT(BurstNo4KCross_A, !burst_valid_o ||
          ({1'b0, burst_addr_o[11:0]} + 13'(burst_bytes_o)) <= 13'd4096, clk_i, rst_ni)
endmodule
