// Tensor engine controller: dispatches LoadStationary and MultiplyMoving in
// order, streams their operands into the array, and writes results to PSUM.
//
// Two units run side by side. The loader takes a LoadStationary's M stationary
// columns, W = cfg_ld_cols_i of them per beat and one beat per cycle, into the
// weight buffer after the latest one's (four buffers, in turn); the streamer
// injects a MultiplyMoving's N moving columns, one per cycle, multiplying with
// the buffer of the latest LoadStationary. So the next LoadStationary overlaps
// the current MultiplyMoving. Dispatch rules, each checked at the edge that
// accepts the instruction:
//   LoadStationary: the loader is free (idle, or taking its last beat now), and
//     the last injection with the target buffer was at least
//     M - 1 - ceil(M / W) advancing edges ago (and none is to come): a W-wide
//     load moves through the array faster than the moving wave it follows.
//   MultiplyMoving: the loader is free (its stationary is complete), the
//     streamer is free, and MinIi cycles have passed since the last one started.
// A column injected at edge t is written to PSUM after edge t + Rows + Cols - 1;
// a PSUM write held by backpressure stops every pipeline register of the
// engine (adv_o low), so nothing is lost and nothing overtakes.
module te_controller #(
  parameter int unsigned Rows = 8,
  parameter int unsigned Cols = 8,
  parameter int unsigned LoadCols = 4
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,

  // Instructions
  input  logic                   cmd_valid_i,
  output logic                   cmd_ready_o,
  input  te_pkg::te_op_e         cmd_op_i,
  input  logic [15:0]            cmd_k_i,
  input  logic [15:0]            cmd_m_i,
  input  logic [15:0]            cmd_n_i,
  input  logic                   cmd_acc_i,
  input  logic [15:0]            cmd_addr_i,
  input  logic [15:0]            cfg_min_ii_i,
  input  logic [15:0]            cfg_ld_cols_i,

  // Operand stream handshakes (data go straight to the array)
  input  logic                   st_valid_i,
  output logic                   st_ready_o,
  input  logic                   mv_valid_i,
  output logic                   mv_ready_o,

  // Array control
  output logic                   adv_o,
  output logic                   mv_inject_o,
  output logic [15:0]            mv_k_o,
  output te_pkg::buf_t           mv_buf_o,
  output logic                   ld_valid_o,
  output logic [15:0]            ld_col_o,   // column of the beat's first element
  output logic [15:0]            ld_cnt_o,   // columns in the beat
  output te_pkg::buf_t           ld_buf_o,

  // PSUM write control (data come from the array)
  output logic                   ps_valid_o,
  input  logic                   ps_ready_i,
  output logic [15:0]            ps_addr_o,
  output logic                   ps_acc_o,
  output logic [Cols-1:0]        ps_mask_o,

  // Status and performance counters
  output logic                   busy_o,
  output logic [31:0]            perf_instr_o,
  output logic [31:0]            perf_busy_o,
  output logic [31:0]            perf_stall_o,
  output logic [63:0]            perf_mac_o
);
  import te_pkg::*;
  `include "tsr_assert.svh"

  // Cycles from injection to the PSUM write; one tag stage per cycle.
  localparam int unsigned Latency = Rows + Cols - 1;

  typedef struct packed {
    logic        valid;
    logic        acc;
    logic [15:0] addr;
    logic [15:0] m;
  } tag_t;

  // Loader
  logic        ld_active_d, ld_active_q;
  logic [15:0] ld_left_d, ld_left_q;     // stationary columns still to take
  logic [15:0] ld_col_d, ld_col_q;
  buf_t        cur_buf_d, cur_buf_q;     // buffer of the latest LoadStationary
  logic [15:0] buf_m_d [WeightBuffers];
  logic [15:0] buf_m_q [WeightBuffers];  // M of each buffer's stationary
  // Advancing edges since the last injection with each buffer (saturating).
  logic [15:0] since_inj_d [WeightBuffers];
  logic [15:0] since_inj_q [WeightBuffers];
  // Streamer
  logic        mm_active_d, mm_active_q;
  logic [15:0] mm_left_d, mm_left_q;
  logic [15:0] mm_addr_d, mm_addr_q;
  logic        mm_acc_d, mm_acc_q;
  logic [15:0] mm_k_d, mm_k_q;
  logic [15:0] mm_m_d, mm_m_q;
  buf_t        mm_buf_d, mm_buf_q;
  logic [15:0] since_mm_d, since_mm_q;   // edges since the last MultiplyMoving started
  // Result tags, one per pipeline stage
  tag_t        tag_d [Latency+1];
  tag_t        tag_q [Latency+1];
  logic [15:0] inflight_d, inflight_q;   // injected columns not yet written
  logic [63:0] mac_d, mac_q;

  logic cmd_fire, st_fire, mv_fire, ps_fire;
  logic ld_free, mm_free, target_free, ii_ok, is_load;
  tag_t tag_out;
  buf_t ld_target;
  logic [15:0] ld_w, beat_cols, ld_beats;
  int   ld_gap;  // advancing edges the load must trail the last injection with its buffer

  assign tag_out = tag_q[Latency];
  assign adv_o = !(tag_out.valid && !ps_ready_i);

  assign st_ready_o = ld_active_q && adv_o;
  assign mv_ready_o = mm_active_q && adv_o;
  assign st_fire = st_valid_i && st_ready_o;
  assign mv_fire = mv_valid_i && mv_ready_o;
  assign ps_fire = ps_valid_o && ps_ready_i;

  // Columns per beat; out-of-range values (an assertion names them) act as 1
  // or LoadCols, so the loader always progresses.
  assign ld_w = (cfg_ld_cols_i == '0) ? 16'd1 :
                (32'(cfg_ld_cols_i) > LoadCols) ? 16'(LoadCols) : cfg_ld_cols_i;
  assign beat_cols = (ld_left_q < ld_w) ? ld_left_q : ld_w;
  assign ld_free = !ld_active_q || (ld_left_q <= ld_w && st_fire);
  assign mm_free = !mm_active_q || (mm_left_q == 16'd1 && mv_fire);
  // Beat j (columns jW .. jW+W-1) writes row r's weights r + 1 edges after it
  // is taken, at edge >= d + 1 + j + r + 1 for a load accepted at edge d; the
  // last moving column injected with the buffer at edge t reads PE [r][c] up
  // to edge t + r + c + 1. So every column is safe when d >= t + c - j - 1 for
  // all its columns, the largest being M - 1 - ceil(M / W) (the last column).
  assign ld_target = cur_buf_q + 1'b1;
  assign ld_beats = 16'((32'(cmd_m_i) + 32'(ld_w) - 1) / 32'(ld_w));
  assign ld_gap = int'(cmd_m_i) - 1 - int'(ld_beats);
  assign target_free = (mm_active_q && mm_buf_q == ld_target) ?
                       (mm_left_q == 16'd1 && mv_fire && ld_gap <= 0) :
                       (ld_gap <= 0 || int'(since_inj_q[ld_target]) + int'(adv_o) >= ld_gap);
  assign ii_ok = since_mm_q >= cfg_min_ii_i;
  assign is_load = cmd_op_i == OpLoadStationary;
  assign cmd_ready_o = is_load ? (ld_free && target_free) : (ld_free && mm_free && ii_ok);
  assign cmd_fire = cmd_valid_i && cmd_ready_o;

  always_comb begin
    ld_active_d = ld_active_q;
    ld_left_d = ld_left_q;
    ld_col_d = ld_col_q;
    cur_buf_d = cur_buf_q;
    buf_m_d = buf_m_q;
    mm_active_d = mm_active_q;
    mm_left_d = mm_left_q;
    mm_addr_d = mm_addr_q;
    mm_acc_d = mm_acc_q;
    mm_k_d = mm_k_q;
    mm_m_d = mm_m_q;
    mm_buf_d = mm_buf_q;
    since_mm_d = (since_mm_q == 16'hFFFF) ? since_mm_q : since_mm_q + 16'd1;
    since_inj_d = since_inj_q;
    mac_d = mac_q;

    if (adv_o) begin
      for (int unsigned b = 0; b < WeightBuffers; b++) begin
        if (mv_fire && mm_buf_q == buf_t'(b)) since_inj_d[b] = '0;
        else if (since_inj_q[b] != 16'hFFFF) since_inj_d[b] = since_inj_q[b] + 16'd1;
      end
    end

    if (st_fire) begin
      ld_left_d = ld_left_q - beat_cols;
      ld_col_d = ld_col_q + beat_cols;
      if (ld_left_q <= ld_w) ld_active_d = 1'b0;
    end
    if (mv_fire) begin
      mm_left_d = mm_left_q - 16'd1;
      mm_addr_d = mm_addr_q + 16'd1;
      mac_d = mac_q + 64'(mm_k_q) * 64'(mm_m_q);
      if (mm_left_q == 16'd1) mm_active_d = 1'b0;
    end

    if (cmd_fire && is_load) begin
      ld_active_d = 1'b1;
      ld_left_d = cmd_m_i;
      ld_col_d = '0;
      cur_buf_d = ld_target;
      buf_m_d[ld_target] = cmd_m_i;
    end
    if (cmd_fire && !is_load) begin
      mm_active_d = 1'b1;
      mm_left_d = cmd_n_i;
      mm_addr_d = cmd_addr_i;
      mm_acc_d = cmd_acc_i;
      mm_k_d = cmd_k_i;
      mm_m_d = buf_m_q[cur_buf_q];
      mm_buf_d = cur_buf_q;
      since_mm_d = 16'd1;
    end

    // Tags move with the array and stop with it.
    tag_d = tag_q;
    if (adv_o) begin
      tag_d[0] = '{valid: mv_fire, acc: mm_acc_q, addr: mm_addr_q, m: mm_m_q};
      for (int unsigned s = 1; s <= Latency; s++) tag_d[s] = tag_q[s-1];
    end

    inflight_d = inflight_q + 16'(mv_fire) - 16'(ps_fire);
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ld_active_q <= 1'b0;
      ld_left_q   <= '0;
      ld_col_q    <= '0;
      cur_buf_q   <= buf_t'(WeightBuffers - 1);  // the first load goes to buffer 0
      buf_m_q     <= '{default: '0};
      since_inj_q <= '{default: 16'hFFFF};
      mm_active_q <= 1'b0;
      mm_left_q   <= '0;
      mm_addr_q   <= '0;
      mm_acc_q    <= 1'b0;
      mm_k_q      <= '0;
      mm_m_q      <= '0;
      mm_buf_q    <= '0;
      since_mm_q  <= 16'hFFFF;
      tag_q       <= '{default: '0};
      inflight_q  <= '0;
      mac_q       <= '0;
    end else begin
      ld_active_q <= ld_active_d;
      ld_left_q   <= ld_left_d;
      ld_col_q    <= ld_col_d;
      cur_buf_q   <= cur_buf_d;
      buf_m_q     <= buf_m_d;
      since_inj_q <= since_inj_d;
      mm_active_q <= mm_active_d;
      mm_left_q   <= mm_left_d;
      mm_addr_q   <= mm_addr_d;
      mm_acc_q    <= mm_acc_d;
      mm_k_q      <= mm_k_d;
      mm_m_q      <= mm_m_d;
      mm_buf_q    <= mm_buf_d;
      since_mm_q  <= since_mm_d;
      tag_q       <= tag_d;
      inflight_q  <= inflight_d;
      mac_q       <= mac_d;
    end
  end

  // Array control
  assign mv_inject_o = mv_fire;
  assign mv_k_o = mm_k_q;
  assign mv_buf_o = mm_buf_q;
  assign ld_valid_o = st_fire;
  assign ld_col_o = ld_col_q;
  assign ld_cnt_o = beat_cols;
  assign ld_buf_o = cur_buf_q;

  // PSUM write
  assign ps_valid_o = tag_out.valid;
  assign ps_addr_o = tag_out.addr;
  assign ps_acc_o = tag_out.acc;
  always_comb begin
    for (int unsigned c = 0; c < Cols; c++) ps_mask_o[c] = c < 32'(tag_out.m);
  end

  // Status and counters
  logic stalled;
  assign busy_o = ld_active_q || mm_active_q || inflight_q != '0;
  assign stalled = busy_o && (!adv_o || (mm_active_q && !mv_valid_i) ||
                              (ld_active_q && !st_valid_i));
  assign perf_mac_o = mac_q;

  tsr_counter #(.Width(32)) u_instr_count (
    .clk_i, .rst_ni, .clear_i(1'b0), .incr_i(cmd_fire),
    .count_o(perf_instr_o), .saturated_o());
  tsr_counter #(.Width(32)) u_busy_count (
    .clk_i, .rst_ni, .clear_i(1'b0), .incr_i(busy_o),
    .count_o(perf_busy_o), .saturated_o());
  tsr_counter #(.Width(32)) u_stall_count (
    .clk_i, .rst_ni, .clear_i(1'b0), .incr_i(stalled),
    .count_o(perf_stall_o), .saturated_o());

  // Instruction fields in range.
  `ASSERT(LoadShape_A, !(cmd_fire && is_load) ||
          (cmd_m_i >= 16'd1 && 32'(cmd_m_i) <= Cols), clk_i, rst_ni)
  `ASSERT(LoadColsInRange_A, cfg_ld_cols_i >= 16'd1 && 32'(cfg_ld_cols_i) <= LoadCols, clk_i, rst_ni)
  `ASSERT(MultiplyShape_A, !(cmd_fire && !is_load) ||
          (cmd_k_i >= 16'd1 && 32'(cmd_k_i) <= Rows && cmd_n_i >= 16'd1), clk_i, rst_ni)
  // Ready/valid: a source holds valid until accepted; a held PSUM write keeps
  // its address and mode. The previous cycle's handshake state is kept in
  // flops here (checks only) rather than through $past, which Verilator 5.006
  // evaluates on combinational readies after the edge.
  logic cmd_wait_q, st_wait_q, mv_wait_q, ps_wait_q, ps_acc_hold_q;
  logic [15:0] ps_addr_hold_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      cmd_wait_q     <= 1'b0;
      st_wait_q      <= 1'b0;
      mv_wait_q      <= 1'b0;
      ps_wait_q      <= 1'b0;
      ps_acc_hold_q  <= 1'b0;
      ps_addr_hold_q <= '0;
    end else begin
      cmd_wait_q     <= cmd_valid_i && !cmd_ready_o;
      st_wait_q      <= st_valid_i && !st_ready_o;
      mv_wait_q      <= mv_valid_i && !mv_ready_o;
      ps_wait_q      <= ps_valid_o && !ps_ready_i;
      ps_acc_hold_q  <= ps_acc_o;
      ps_addr_hold_q <= ps_addr_o;
    end
  end
  `ASSERT(CommandHeld_A, !cmd_wait_q || cmd_valid_i, clk_i, rst_ni)
  `ASSERT(StationaryHeld_A, !st_wait_q || st_valid_i, clk_i, rst_ni)
  `ASSERT(MovingHeld_A, !mv_wait_q || mv_valid_i, clk_i, rst_ni)
  `ASSERT(PsumWriteHeld_A, !ps_wait_q ||
          (ps_valid_o && ps_addr_o == ps_addr_hold_q && ps_acc_o == ps_acc_hold_q), clk_i, rst_ni)
  // Invariants.
  `ASSERT(InflightNoUnderflow_A, !(inflight_q == '0 && ps_fire), clk_i, rst_ni)
  `ASSERT(StreamerNeverUsesLoadingBuffer_A, !(ld_active_q && mm_active_q) ||
          mm_buf_q != cur_buf_q, clk_i, rst_ni)
  `ASSERT_KNOWN(CmdReadyKnown_A, cmd_ready_o, clk_i, rst_ni)
  `ASSERT_KNOWN(PsValidKnown_A, ps_valid_o, clk_i, rst_ni)
  `ASSERT_INIT(SizesInRange_A, Rows >= 1 && Cols >= 1 && Rows <= 1024 && Cols <= 1024 &&
               LoadCols >= 1 && LoadCols <= Cols)
endmodule
