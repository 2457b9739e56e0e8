// Tensor engine: a weight-stationary bf16 systolic array of Rows x Cols PEs with
// its controller, computing dst[M, N] (=|+=) stationary[K, M].T @ moving[K, N]
// into PSUM (docs/tensor-engine.md).
module tensor_engine #(
  parameter int unsigned Rows = 8,     // contraction (partition) dimension K
  parameter int unsigned Cols = 8,     // stationary free dimension M
  parameter int unsigned LoadCols = 4  // widest stationary beat, in columns
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,

  // Instructions: LoadStationary uses m; MultiplyMoving uses k, n, acc, addr.
  input  logic                   cmd_valid_i,
  output logic                   cmd_ready_o,
  input  te_pkg::te_op_e         cmd_op_i,
  input  logic [15:0]            cmd_k_i,
  input  logic [15:0]            cmd_m_i,
  input  logic [15:0]            cmd_n_i,
  input  logic                   cmd_acc_i,   // accumulate into PSUM (else overwrite)
  input  logic [15:0]            cmd_addr_i,  // PSUM free index of result column 0
  // Configuration: minimum cycles between MultiplyMoving starts, and the
  // stationary columns a beat carries (1 .. LoadCols).
  input  logic [15:0]            cfg_min_ii_i,
  input  logic [15:0]            cfg_ld_cols_i,

  // SBUF read stream: stationary[:, jW .. jW+W-1] (W = cfg_ld_cols_i), one
  // group of columns per beat; column jW+i, partition p in [i][p]
  input  logic                   st_valid_i,
  output logic                   st_ready_o,
  input  logic [LoadCols-1:0][Rows-1:0][15:0] st_data_i,
  // SBUF read stream: moving[:, n], one column per beat
  input  logic                   mv_valid_i,
  output logic                   mv_ready_o,
  input  logic [Rows-1:0][15:0]  mv_data_i,

  // PSUM write: dst[:, n] at free index ps_addr_o, partitions where ps_mask_o
  output logic                   ps_valid_o,
  input  logic                   ps_ready_i,
  output logic [15:0]            ps_addr_o,
  output logic                   ps_acc_o,
  output logic [Cols-1:0]        ps_mask_o,
  output logic [Cols-1:0][31:0]  ps_data_o,

  // Status and performance counters (saturating)
  output logic                   busy_o,
  output logic [31:0]            perf_instr_o,  // instructions accepted
  output logic [31:0]            perf_busy_o,   // cycles with work in flight
  output logic [31:0]            perf_stall_o,  // busy cycles held by PSUM or starved of operands
  output logic [63:0]            perf_mac_o     // multiply-accumulates of valid columns
);
  logic           adv;
  logic           mv_inject, ld_valid;
  te_pkg::buf_t   mv_buf, ld_buf;
  logic [15:0]    mv_k, ld_col, ld_cnt;

  te_controller #(.Rows(Rows), .Cols(Cols), .LoadCols(LoadCols)) u_controller (
    .clk_i, .rst_ni,
    .cmd_valid_i, .cmd_ready_o, .cmd_op_i, .cmd_k_i, .cmd_m_i, .cmd_n_i, .cmd_acc_i,
    .cmd_addr_i, .cfg_min_ii_i, .cfg_ld_cols_i,
    .st_valid_i, .st_ready_o, .mv_valid_i, .mv_ready_o,
    .adv_o(adv), .mv_inject_o(mv_inject), .mv_k_o(mv_k), .mv_buf_o(mv_buf),
    .ld_valid_o(ld_valid), .ld_col_o(ld_col), .ld_cnt_o(ld_cnt), .ld_buf_o(ld_buf),
    .ps_valid_o, .ps_ready_i, .ps_addr_o, .ps_acc_o, .ps_mask_o,
    .busy_o, .perf_instr_o, .perf_busy_o, .perf_stall_o, .perf_mac_o);

  te_array #(.Rows(Rows), .Cols(Cols), .LoadCols(LoadCols)) u_array (
    .clk_i, .rst_ni,
    .adv_i(adv),
    .mv_inject_i(mv_inject), .mv_k_i(mv_k), .mv_buf_i(mv_buf), .mv_data_i,
    .ld_valid_i(ld_valid), .ld_col_i(ld_col), .ld_cnt_i(ld_cnt), .ld_buf_i(ld_buf),
    .ld_data_i(st_data_i),
    .out_data_o(ps_data_o));
endmodule
