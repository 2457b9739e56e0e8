// Tensor engine: the weight-stationary systolic array of Rows x Cols bf16 PEs,
// with its input skew and output de-skew.
//
// PE[r][c] holds two stationary weights (double buffer) and computes
//   psum_out = psum_in + w[sel][r][c] * x   (rows whose x is not valid pass psum_in)
// Moving data enter row r at the left r cycles after injection and move right
// one PE per cycle, carrying a valid bit (row r < K) and the weight-buffer
// select of their instruction; partial sums move down one PE per cycle. Column
// c of an injected moving column leaves the bottom Rows + c cycles after
// injection and is delayed Cols - 1 - c more, so that all Cols results of one
// moving column leave together, Rows + Cols - 1 cycles after injection.
//
// Stationary beats take the same row skew, so the write of weight [r][c] follows
// the moving wave of an earlier instruction through the array rather than
// overtaking it: a load may start the cycle after the last injection of the
// instruction that used its buffer (te_controller enforces this).
//
// PE state is held as arrays updated by one loop rather than one module per PE:
// the Verilated model then runs a loop, not separate code for each PE.
module te_array #(
  parameter int unsigned Rows = 8,
  parameter int unsigned Cols = 8
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,

  // Every pipeline register of the array moves only when adv_i is set.
  input  logic                        adv_i,

  // Moving column injection (one per cycle).
  input  logic                        mv_inject_i,
  input  logic [15:0]                 mv_k_i,     // rows in use
  input  logic                        mv_buf_i,   // weight buffer to multiply with
  input  logic [Rows-1:0][15:0]       mv_data_i,

  // Stationary beat: column ld_col_i of weight buffer ld_buf_i.
  input  logic                        ld_valid_i,
  input  logic [15:0]                 ld_col_i,
  input  logic                        ld_buf_i,
  input  logic [Rows-1:0][15:0]       ld_data_i,

  // Results of one moving column, aligned.
  output logic [Cols-1:0][31:0]       out_data_o
);
  import te_pkg::*;

  // Triangular skew storage: row r keeps stages 0..r at SkewBase(r) + s.
  localparam int unsigned SkewSize = Rows * (Rows + 1) / 2;
  // De-skew storage: column c keeps Cols - 1 - c stages at DeskewBase(c) + s.
  localparam int unsigned DeskewSize = (Cols > 1) ? Cols * (Cols - 1) / 2 : 1;

  function automatic int unsigned skew_base(int unsigned r);
    return r * (r + 1) / 2;
  endfunction
  function automatic int unsigned deskew_base(int unsigned c);
    return c * (2 * Cols - 1 - c) / 2;
  endfunction

  // Moving element: {buffer select, valid, bf16}.
  localparam int unsigned XWidth = 18;
  localparam int unsigned XValid = 16;
  localparam int unsigned XSel = 17;
  // Stationary beat in the skew: {column, valid, buffer, bf16}.
  localparam int unsigned LWidth = 34;
  localparam int unsigned LBuf = 16;
  localparam int unsigned LValid = 17;
  localparam int unsigned LCol = 18;
  localparam int unsigned ColIdxWidth = (Cols > 1) ? $clog2(Cols) : 1;

  logic [XWidth-1:0] xskew_d [SkewSize];
  logic [XWidth-1:0] xskew_q [SkewSize];
  logic [LWidth-1:0] lskew_d [SkewSize];
  logic [LWidth-1:0] lskew_q [SkewSize];
  logic [XWidth-1:0] x_d     [Rows][Cols];
  logic [XWidth-1:0] x_q     [Rows][Cols];
  logic [31:0]       psum_d  [Rows][Cols];
  logic [31:0]       psum_q  [Rows][Cols];
  logic [31:0]       dsk_d   [DeskewSize];
  logic [31:0]       dsk_q   [DeskewSize];
  logic [15:0]       w_q     [2][Rows][Cols];

  // Input skew of moving data and stationary beats.
  always_comb begin
    if (adv_i) begin
      for (int unsigned r = 0; r < Rows; r++) begin
        xskew_d[skew_base(r)] = {mv_buf_i, mv_inject_i && (r < 32'(mv_k_i)), mv_data_i[r]};
        lskew_d[skew_base(r)] = {ld_col_i, ld_valid_i, ld_buf_i, ld_data_i[r]};
        for (int unsigned s = 1; s <= r; s++) begin
          xskew_d[skew_base(r) + s] = xskew_q[skew_base(r) + s - 1];
          lskew_d[skew_base(r) + s] = lskew_q[skew_base(r) + s - 1];
        end
      end
    end else begin
      xskew_d = xskew_q;
      lskew_d = lskew_q;
    end
  end

  // The PE grid: one multiply-add per PE per cycle.
  logic [XWidth-1:0] x;
  logic [31:0]       pin;
  always_comb begin
    x = '0;
    pin = '0;
    if (adv_i) begin
      for (int unsigned r = 0; r < Rows; r++) begin
        for (int unsigned c = 0; c < Cols; c++) begin
          x = (c == 0) ? xskew_q[skew_base(r) + r] : x_q[r][c-1];
          pin = (r == 0) ? Fp32NegZero : psum_q[r-1][c];
          x_d[r][c] = x;
          psum_d[r][c] = x[XValid] ? fp32_add(pin, bf16_mul(x[15:0], w_q[x[XSel]][r][c])) : pin;
        end
      end
    end else begin
      x_d = x_q;
      psum_d = psum_q;
    end
  end

  // Output de-skew.
  always_comb begin
    if (adv_i) begin
      for (int unsigned c = 0; c + 1 < Cols; c++) begin
        dsk_d[deskew_base(c)] = psum_q[Rows-1][c];
        for (int unsigned s = 1; s + 1 + c < Cols; s++) begin
          dsk_d[deskew_base(c) + s] = dsk_q[deskew_base(c) + s - 1];
        end
      end
    end else begin
      dsk_d = dsk_q;
    end
    if (Cols == 1) dsk_d[0] = '0;
  end

  always_comb begin
    for (int unsigned c = 0; c < Cols; c++) begin
      out_data_o[c] = (c + 1 == Cols) ? psum_q[Rows-1][c] : dsk_q[deskew_base(c) + Cols - 2 - c];
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      xskew_q <= '{default: '0};
      lskew_q <= '{default: '0};
      x_q     <= '{default: '{default: '0}};
      psum_q  <= '{default: '{default: '0}};
      dsk_q   <= '{default: '0};
    end else begin
      xskew_q <= xskew_d;
      lskew_q <= lskew_d;
      x_q     <= x_d;
      psum_q  <= psum_d;
      dsk_q   <= dsk_d;
    end
  end

  // Stationary weights: a memory per row, written when a beat leaves the
  // row's skew. Not reset: a weight is only read after a load wrote it.
  for (genvar r = 0; r < Rows; r++) begin : gen_weight_rows
    logic [LWidth-1:0] beat;
    assign beat = lskew_q[skew_base(r) + r];
    always_ff @(posedge clk_i) begin
      if (adv_i && beat[LValid]) begin
        w_q[beat[LBuf]][r][beat[LCol +: ColIdxWidth]] <= beat[15:0];
      end
    end
  end

endmodule
