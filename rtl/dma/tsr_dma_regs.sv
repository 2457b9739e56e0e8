// DMA engine register unit: global and per-queue registers, their host port,
// and the performance counters.
//
// The other units change queue state through events (a write error, a
// completed descriptor, a fetch, a failed descriptor), applied after the
// host's register write of the same cycle and in that order, so a later
// event wins over an earlier one. See docs/dma.md for the register map.
module tsr_dma_regs
  import tsr_dma_pkg::*;
  import tsr_dma_unit_pkg::*;
#(
  parameter int unsigned Queues         = 16,
  parameter int unsigned DataBytes      = 64,
  parameter int unsigned MaxOutstanding = 16,
  localparam int unsigned QW = (Queues > 1) ? $clog2(Queues) : 1
) (
  input  logic                     clk_i,
  input  logic                     rst_ni,

  // Host port: a request is taken every cycle; read data the cycle after.
  input  logic                     reg_req_i,
  input  logic                     reg_we_i,
  input  logic [11:0]              reg_addr_i,
  input  logic [31:0]              reg_wdata_i,
  output logic [31:0]              reg_rdata_o,

  // Register contents
  output logic                     eng_en_o,
  output logic [7:0]               rd_limit_o,   // outstanding reads allowed (1 .. MaxOutstanding)
  output logic [7:0]               wr_limit_o,   // outstanding writes allowed
  output logic [7:0]               run_gap_o,    // cycles between run starts of a side (0, 1: none)
  output logic [15:0]              desc_gap_o,   // cycles from a descriptor's last W beat to the next one's first AW (0, 1: none)
  output logic [47:0]              win_base_o,
  output logic [47:0]              win_limit_o,
  output queue_t [Queues-1:0]      queues_o,
  output logic                     rewind_o,     // the host moved a queue's fetch pointer
  output logic [QW-1:0]            rewind_queue_o,

  // Queue events
  input  logic                     wr_err_i,     // a write of (queue, index) got an error response
  input  logic [QW-1:0]            wr_err_queue_i,
  input  logic [23:0]              wr_err_index_i,
  input  logic                     done_i,       // (queue, index) completed: HEAD moves past it
  input  logic [QW-1:0]            done_queue_i,
  input  logic [23:0]              done_index_i,
  input  logic                     done_last_i,
  input  logic                     fetch_i,      // the fetch unit took a queue's next descriptor
  input  logic [QW-1:0]            fetch_queue_i,
  input  logic                     fail_i,       // (queue, index) failed with fail_code_i
  input  logic [QW-1:0]            fail_queue_i,
  input  logic [23:0]              fail_index_i,
  input  logic [7:0]               fail_code_i,

  // Status and counter events
  input  logic                     busy_i,
  input  logic [Queues-1:0]        q_active_i,   // a descriptor of the queue is running or completing
  input  logic                     rd_bytes_valid_i,
  input  logic [31:0]              rd_bytes_i,
  input  logic                     wr_bytes_valid_i,
  input  logic [31:0]              wr_bytes_i,
  input  logic                     stall_i       // busy, and no R or W beat moved
);
  typedef struct packed {
    logic        en;
    logic [7:0]  rd_limit;  // CTRL[15:8]; 0 = MaxOutstanding
    logic [7:0]  wr_limit;  // CTRL[23:16]
    logic [7:0]  run_gap;   // CTRL[31:24]
    logic [15:0] desc_gap;  // TIMING[15:0]
    logic [47:0] win_base;
    logic [47:0] win_limit;
  } global_t;

  global_t               glob_q, glob_d;
  queue_t [Queues-1:0]   q_q, q_d;
  logic [63:0]           bytes_rd_q, bytes_rd_d, bytes_wr_q, bytes_wr_d;
  logic [31:0]           rdata_q, rdata_d;
  logic                  cnt_clear;

  logic [QW-1:0] reg_q;
  logic          reg_is_queue;
  assign reg_is_queue = reg_addr_i >= RegQueueBase &&
                        reg_addr_i < RegQueueBase + 12'(Queues * RegQueueStride);
  assign reg_q = QW'((reg_addr_i - RegQueueBase) >> 5);

  function automatic logic [7:0] limit(logic [7:0] field);
    return (field == '0 || field > 8'(MaxOutstanding)) ? 8'(MaxOutstanding) : field;
  endfunction

  assign eng_en_o    = glob_q.en;
  assign rd_limit_o  = limit(glob_q.rd_limit);
  assign wr_limit_o  = limit(glob_q.wr_limit);
  assign run_gap_o   = glob_q.run_gap;
  assign desc_gap_o  = glob_q.desc_gap;
  assign win_base_o  = glob_q.win_base;
  assign win_limit_o = glob_q.win_limit;
  assign queues_o    = q_q;

  // ---------------------------------------------------------------------------
  // Register writes and queue events
  // ---------------------------------------------------------------------------
  always_comb begin
    glob_d         = glob_q;
    q_d            = q_q;
    cnt_clear      = 1'b0;
    rewind_o       = 1'b0;
    rewind_queue_o = reg_q;

    if (reg_req_i && reg_we_i) begin
      if (reg_is_queue) begin
        unique case ({7'b0, reg_addr_i[4:0]})
          RegQBaseLo: q_d[reg_q].base[31:0]  = reg_wdata_i;
          RegQBaseHi: q_d[reg_q].base[47:32] = reg_wdata_i[15:0];
          RegQSize:   q_d[reg_q].size        = reg_wdata_i[23:0];
          RegQHead: begin
            q_d[reg_q].head = reg_wdata_i[23:0];
            q_d[reg_q].next = reg_wdata_i[23:0];
            rewind_o = 1'b1;
          end
          RegQTail:   q_d[reg_q].tail        = reg_wdata_i[23:0];
          RegQCtrl: begin
            q_d[reg_q].en = reg_wdata_i[0];
            if (reg_wdata_i[1]) begin
              q_d[reg_q].next = q_q[reg_q].head;
              q_d[reg_q].err  = 1'b0;
              q_d[reg_q].code = ErrNone;
              q_d[reg_q].last = 1'b0;
              rewind_o = 1'b1;
            end
          end
          default: ;
        endcase
      end else begin
        unique case (reg_addr_i)
          RegCtrl: begin
            glob_d.en       = reg_wdata_i[0];
            glob_d.rd_limit = reg_wdata_i[15:8];
            glob_d.wr_limit = reg_wdata_i[23:16];
            glob_d.run_gap  = reg_wdata_i[31:24];
          end
          RegWinBaseLo:  glob_d.win_base[31:0]   = reg_wdata_i;
          RegWinBaseHi:  glob_d.win_base[47:32]  = reg_wdata_i[15:0];
          RegWinLimitLo: glob_d.win_limit[31:0]  = reg_wdata_i;
          RegWinLimitHi: glob_d.win_limit[47:32] = reg_wdata_i[15:0];
          RegCntClear:   cnt_clear = 1'b1;
          RegTiming:     glob_d.desc_gap = reg_wdata_i[15:0];
          default: ;
        endcase
      end
    end

    // An error stops only the queue it belongs to, and only its first error counts.
    if (wr_err_i && !q_q[wr_err_queue_i].err) begin
      q_d[wr_err_queue_i].err  = 1'b1;
      q_d[wr_err_queue_i].code = ErrWriteResp;
      q_d[wr_err_queue_i].info = wr_err_index_i;
    end
    if (done_i) begin
      q_d[done_queue_i].head = ring_next(done_index_i, q_q[done_queue_i].size);
      if (done_last_i) q_d[done_queue_i].last = 1'b1;
    end
    if (fetch_i) begin
      q_d[fetch_queue_i].next = ring_next(q_q[fetch_queue_i].next, q_q[fetch_queue_i].size);
    end
    if (fail_i && !q_q[fail_queue_i].err) begin
      q_d[fail_queue_i].err  = 1'b1;
      q_d[fail_queue_i].code = fail_code_i;
      q_d[fail_queue_i].info = fail_index_i;
    end
  end

  // ---------------------------------------------------------------------------
  // Performance counters
  // ---------------------------------------------------------------------------
  logic [63:0] cnt_done, cnt_busy, cnt_stall;

  function automatic logic [63:0] sat_add(logic [63:0] a, logic [63:0] b);
    logic [64:0] s;
    s = {1'b0, a} + {1'b0, b};
    return s[64] ? '1 : s[63:0];
  endfunction

  always_comb begin
    bytes_rd_d = bytes_rd_q;
    bytes_wr_d = bytes_wr_q;
    if (cnt_clear) begin
      bytes_rd_d = '0;
      bytes_wr_d = '0;
    end else begin
      if (rd_bytes_valid_i) bytes_rd_d = sat_add(bytes_rd_q, 64'(rd_bytes_i));
      if (wr_bytes_valid_i) bytes_wr_d = sat_add(bytes_wr_q, 64'(wr_bytes_i));
    end
  end

  /* verilator lint_off PINCONNECTEMPTY */
  tsr_counter #(.Width(64)) u_cnt_done (
    .clk_i, .rst_ni, .clear_i(cnt_clear), .incr_i(done_i), .count_o(cnt_done),
    .saturated_o());
  tsr_counter #(.Width(64)) u_cnt_busy (
    .clk_i, .rst_ni, .clear_i(cnt_clear), .incr_i(busy_i), .count_o(cnt_busy), .saturated_o());
  tsr_counter #(.Width(64)) u_cnt_stall (
    .clk_i, .rst_ni, .clear_i(cnt_clear), .incr_i(stall_i), .count_o(cnt_stall), .saturated_o());
  /* verilator lint_on PINCONNECTEMPTY */

  // ---------------------------------------------------------------------------
  // Register read
  // ---------------------------------------------------------------------------
  always_comb begin
    rdata_d = '0;
    if (reg_req_i && !reg_we_i) begin
      if (reg_is_queue) begin
        unique case ({7'b0, reg_addr_i[4:0]})
          RegQBaseLo:  rdata_d = q_q[reg_q].base[31:0];
          RegQBaseHi:  rdata_d = {16'b0, q_q[reg_q].base[47:32]};
          RegQSize:    rdata_d = {8'b0, q_q[reg_q].size};
          RegQHead:    rdata_d = {8'b0, q_q[reg_q].head};
          RegQTail:    rdata_d = {8'b0, q_q[reg_q].tail};
          RegQCtrl:    rdata_d = {31'b0, q_q[reg_q].en};
          RegQStatus:  rdata_d = {16'b0, q_q[reg_q].code, 5'b0, q_q[reg_q].last, q_q[reg_q].err,
                                  q_active_i[reg_q]};
          RegQErrInfo: rdata_d = {8'b0, q_q[reg_q].info};
          default: ;
        endcase
      end else begin
        unique case (reg_addr_i)
          RegId:            rdata_d = 32'h5444_4D41;
          RegParams:        rdata_d = {8'b0, 8'(MaxOutstanding), 8'(DataBytes), 8'(Queues)};
          RegCtrl:          rdata_d = {glob_q.run_gap, glob_q.wr_limit, glob_q.rd_limit, 7'b0, glob_q.en};
          RegStatus:        rdata_d = {31'b0, busy_i};
          RegTiming:        rdata_d = {16'b0, glob_q.desc_gap};
          RegWinBaseLo:     rdata_d = glob_q.win_base[31:0];
          RegWinBaseHi:     rdata_d = {16'b0, glob_q.win_base[47:32]};
          RegWinLimitLo:    rdata_d = glob_q.win_limit[31:0];
          RegWinLimitHi:    rdata_d = {16'b0, glob_q.win_limit[47:32]};
          RegBytesRdLo:     rdata_d = bytes_rd_q[31:0];
          RegBytesRdHi:     rdata_d = bytes_rd_q[63:32];
          RegBytesWrLo:     rdata_d = bytes_wr_q[31:0];
          RegBytesWrHi:     rdata_d = bytes_wr_q[63:32];
          RegDescDoneLo:    rdata_d = cnt_done[31:0];
          RegDescDoneHi:    rdata_d = cnt_done[63:32];
          RegBusyCyclesLo:  rdata_d = cnt_busy[31:0];
          RegBusyCyclesHi:  rdata_d = cnt_busy[63:32];
          RegStallCyclesLo: rdata_d = cnt_stall[31:0];
          RegStallCyclesHi: rdata_d = cnt_stall[63:32];
          default: ;
        endcase
      end
    end
  end
  assign reg_rdata_o = rdata_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      glob_q     <= '0;
      q_q        <= '0;
      bytes_rd_q <= '0;
      bytes_wr_q <= '0;
      rdata_q    <= '0;
    end else begin
      glob_q     <= glob_d;
      q_q        <= q_d;
      bytes_rd_q <= bytes_rd_d;
      bytes_wr_q <= bytes_wr_d;
      rdata_q    <= rdata_d;
    end
  end
endmodule
