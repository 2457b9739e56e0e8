// Tensor engine: the weight-stationary systolic array of Rows x Cols bf16 PEs,
// with its input skew and output de-skew.
//
// PE[r][c] holds four stationary weights (te_pkg::WeightBuffers) and computes
//   psum_out = psum_in + w[sel][r][c] * x   (rows whose x is not valid pass psum_in)
// Moving data enter row r at the left r cycles after injection and move right
// one PE per cycle, carrying a valid bit (row r < K) and the weight-buffer
// select of their instruction; partial sums move down one PE per cycle. Column
// c of an injected moving column leaves the bottom Rows + c cycles after
// injection and is delayed Cols - 1 - c more, so that all Cols results of one
// moving column leave together, Rows + Cols - 1 cycles after injection.
//
// Stationary beats, LoadCols columns wide at most, take the same row skew, so
// the write of weight [r][c] follows the moving wave of an earlier instruction
// through the array; a beat carries several columns, so a load overtakes that
// wave unless it starts late enough after the last injection of the
// instruction that used its buffer (te_controller enforces this).
//
// PE state is held as arrays updated by one loop rather than one module per PE,
// and the skews are ring buffers rather than shift registers: the Verilated
// model then runs loops instead of carrying separate code for each PE.
module te_array #(
  parameter int unsigned Rows = 8,
  parameter int unsigned Cols = 8,
  parameter int unsigned LoadCols = 4
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,

  // Every pipeline register of the array moves only when adv_i is set.
  input  logic                        adv_i,

  // Moving column injection (one per cycle).
  input  logic                        mv_inject_i,
  input  logic [15:0]                 mv_k_i,     // rows in use
  input  te_pkg::buf_t                mv_buf_i,   // weight buffer to multiply with
  input  logic [Rows-1:0][15:0]       mv_data_i,

  // Stationary beat: columns ld_col_i .. ld_col_i + ld_cnt_i - 1 of weight
  // buffer ld_buf_i, column ld_col_i + i in ld_data_i[i].
  input  logic                        ld_valid_i,
  input  logic [15:0]                 ld_col_i,
  input  logic [15:0]                 ld_cnt_i,
  input  te_pkg::buf_t                ld_buf_i,
  input  logic [LoadCols-1:0][Rows-1:0][15:0] ld_data_i,

  // Results of one moving column, aligned.
  output logic [Cols-1:0][31:0]       out_data_o
);
  import te_pkg::*;

  // Skew and de-skew are ring buffers indexed by a count of advancing cycles:
  // slot ptr_q - 1 - j holds what was written j advancing cycles ago. Only one
  // slot is written per cycle, so nothing is shifted.
  localparam int unsigned PtrWidth = ($clog2(Rows) > $clog2(Cols)) ?
                                     (($clog2(Rows) > 0) ? $clog2(Rows) : 1) :
                                     (($clog2(Cols) > 0) ? $clog2(Cols) : 1);
  localparam int unsigned RingDepth = 2 ** PtrWidth;
  localparam int unsigned ColIdxWidth = (Cols > 1) ? $clog2(Cols) : 1;

  // Moving element, 32 bits: {13'0, buffer select[1:0], valid, bf16}.
  localparam int unsigned XValid = 16;
  localparam int unsigned XSel = 17;
  // Stationary beat element, 32 bits: {column[12:0], valid, buffer[1:0], bf16}.
  localparam int unsigned LBuf = 16;
  localparam int unsigned LValid = 18;
  localparam int unsigned LCol = 19;

  logic [PtrWidth-1:0] ptr_d, ptr_q;
  logic [31:0]         xin     [Rows];
  logic [31:0]         lin     [Rows][LoadCols];
  logic [31:0]         xring_q [RingDepth][Rows];
  logic [31:0]         lring_q [RingDepth][Rows][LoadCols];
  logic [31:0]         dring_q [RingDepth][Cols];
  logic [31:0]         x_d     [Rows][Cols];
  logic [31:0]         x_q     [Rows][Cols];
  logic [31:0]         psum_d  [Rows][Cols];
  logic [31:0]         psum_q  [Rows][Cols];
  logic [15:0]         w_q     [WeightBuffers][Rows][Cols];

  assign ptr_d = adv_i ? ptr_q + 1'b1 : ptr_q;

  // Columns are below 2^13 (te_controller checks Cols); the top bits are zero.
  logic unused_ld_col;
  assign unused_ld_col = ^ld_col_i[15:13];

  // What enters the skews this cycle.
  always_comb begin
    for (int unsigned r = 0; r < Rows; r++) begin
      xin[r] = {13'h0, mv_buf_i, mv_inject_i && (r < 32'(mv_k_i)), mv_data_i[r]};
      for (int unsigned i = 0; i < LoadCols; i++) begin
        lin[r][i] = {ld_col_i[12:0] + 13'(i), ld_valid_i && (i < 32'(ld_cnt_i)), ld_buf_i, ld_data_i[i][r]};
      end
    end
  end

  // Skew and de-skew storage, one slot written per advancing cycle; not reset
  // (a slot is read only after the cycle that wrote it, except in the first
  // cycles after reset, whose results the controller never writes to PSUM).
  // The de-skew ring takes the bottom row's next state, so its slot ptr_q - 1
  // holds what the bottom row holds now.
  always_ff @(posedge clk_i) begin
    if (adv_i) begin
      xring_q[ptr_q] <= xin;
      lring_q[ptr_q] <= lin;
      dring_q[ptr_q] <= psum_d[Rows-1];
    end
  end

  // The PE grid: one multiply-add per PE per cycle. Row r takes its moving
  // data from the skew slot written r advancing cycles ago. The next state is
  // a function of registers only (the registers, not this block, hold when the
  // engine stalls): the Verilated model then evaluates the grid once per
  // clock, not again whenever a port input such as ps_ready_i changes.
  logic [31:0]         pe_x, pe_psum_in;
  logic [PtrWidth-1:0] slot;
  always_comb begin
    for (int unsigned r = 0; r < Rows; r++) begin
      slot = ptr_q - PtrWidth'(1) - PtrWidth'(r);
      for (int unsigned c = 0; c < Cols; c++) begin
        pe_x = (c == 0) ? xring_q[slot][r] : x_q[r][c-1];
        pe_psum_in = (r == 0) ? Fp32NegZero : psum_q[r-1][c];
        x_d[r][c] = pe_x;
        psum_d[r][c] = pe_x[XValid] ?
            fp32_add(pe_psum_in, bf16_mul(pe_x[15:0], w_q[pe_x[XSel +: BufWidth]][r][c])) : pe_psum_in;
      end
    end
  end

  // Output de-skew: column c is taken Cols - 1 - c advancing cycles late.
  always_comb begin
    for (int unsigned c = 0; c < Cols; c++) begin
      out_data_o[c] = dring_q[ptr_q - PtrWidth'(Cols - c)][c];
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ptr_q <= '0;
    end else begin
      ptr_q <= ptr_d;
    end
  end

  // PE registers. Copied by loops of blocking assignments: Verilator 5.006
  // expands a whole-array non-blocking assignment into one delayed assignment
  // per element (some 30,000 statements at 128 x 128, most of the build time
  // and a large share of the run time) and does not support non-blocking
  // assignments to arrays inside loops (BLKLOOPINIT). Only combinational logic
  // reads these arrays, so the blocking copy cannot race with another process.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int unsigned r = 0; r < Rows; r++) begin
        for (int unsigned c = 0; c < Cols; c++) begin
          x_q[r][c] = '0;
          psum_q[r][c] = '0;
        end
      end
    end else if (adv_i) begin
      for (int unsigned r = 0; r < Rows; r++) begin
        for (int unsigned c = 0; c < Cols; c++) begin
          x_q[r][c] = x_d[r][c];
          psum_q[r][c] = psum_d[r][c];
        end
      end
    end
  end

  // A waveform view of the grid for small arrays: Verilator traces
  // one-dimensional arrays only. Large arrays skip it, so the grid loop stays
  // the only per-PE work of their models.
  localparam bit GridView = Rows * Cols <= 256;
  if (GridView) begin : gen_grid_view
    for (genvar r = 0; r < Rows; r++) begin : gen_rows
      logic [31:0] view_psum [Cols];
      logic [31:0] view_x    [Cols];
      logic [15:0] view_w0   [Cols];
      logic [15:0] view_w1   [Cols];
      logic [15:0] view_w2   [Cols];
      logic [15:0] view_w3   [Cols];
      always_comb begin
        for (int unsigned c = 0; c < Cols; c++) begin
          view_psum[c] = psum_q[r][c];
          view_x[c] = x_q[r][c];
          view_w0[c] = w_q[0][r][c];
          view_w1[c] = w_q[1][r][c];
          view_w2[c] = w_q[2][r][c];
          view_w3[c] = w_q[3][r][c];
        end
      end
    end
  end

  // Stationary weights: a memory per row, written when a beat leaves the
  // row's skew, up to LoadCols columns at once. Not reset: a weight is only
  // read after a load wrote it.
  for (genvar r = 0; r < Rows; r++) begin : gen_weight_rows
    for (genvar i = 0; i < LoadCols; i++) begin : gen_beat_cols
      logic [31:0] beat;
      assign beat = lring_q[ptr_q - PtrWidth'(1) - PtrWidth'(r)][r][i];
      always_ff @(posedge clk_i) begin
        if (adv_i && beat[LValid]) begin
          w_q[beat[LBuf +: BufWidth]][r][beat[LCol +: ColIdxWidth]] <= beat[15:0];
        end
      end
    end
  end

endmodule
