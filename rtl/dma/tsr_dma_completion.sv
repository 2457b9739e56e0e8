// DMA engine completion unit: one descriptor whose data beats are all sent,
// waiting for its write responses before its semaphore (COMPLETION) and
// status writes; then it advances the queue's HEAD.
//
// Writes are posted on one AXI ID, so responses come back in order: the
// descriptor's writes are all acknowledged once as many responses have come
// back as write addresses had been issued when it was handed over. Its own
// writes go out ahead of data bursts, between bursts (the engine's AW mux).
module tsr_dma_completion
  import tsr_dma_pkg::*;
  import tsr_dma_unit_pkg::*;
#(
  parameter int unsigned Queues    = 16,
  parameter int unsigned DataBytes = 64,
  localparam int unsigned QW     = (Queues > 1) ? $clog2(Queues) : 1,
  localparam int unsigned LaneW  = $clog2(DataBytes),
  localparam int unsigned BurstW = $clog2(max_burst_bytes(DataBytes)) + 1
) (
  input  logic              clk_i,
  input  logic              rst_ni,

  // Hand-over of a descriptor whose last data beat is sent
  input  logic              handoff_valid_i,
  output logic              handoff_ready_o,
  input  logic [QW-1:0]     handoff_queue_i,
  input  logic [23:0]       handoff_index_i,
  input  logic [47:0]       handoff_desc_addr_i,  // its ring slot, for the status write
  input  logic [47:0]       handoff_sem_addr_i,
  input  logic [15:0]       handoff_sem_value_i,
  input  logic              handoff_completion_i, // FLAG_COMPLETION
  input  logic              handoff_last_i,       // FLAG_LAST

  // The write channels: every AW and B handshake, this unit's AW, and the
  // owner of the response on B (from the engine's tag FIFO)
  input  logic              aw_hs_i,
  input  logic              aw_mine_i,
  input  logic              b_hs_i,
  input  logic              b_err_i,
  input  logic [QW-1:0]     b_queue_i,
  input  logic [23:0]       b_index_i,

  // This unit's next write: a one-beat burst of w_bytes_o bytes at lane w_lane_o
  output logic              aw_req_o,
  output logic [63:0]       aw_addr_o,
  output logic [LaneW-1:0]  w_lane_o,
  output logic [BurstW-1:0] w_bytes_o,
  output logic [31:0]       w_value_o,

  // The held descriptor, and its completion (HEAD moves past it)
  output logic              valid_o,
  output logic [QW-1:0]     queue_o,
  output logic              done_o,
  output logic [QW-1:0]     done_queue_o,
  output logic [23:0]       done_index_o,
  output logic              done_last_o
);
  localparam int unsigned StatusRowOffset = DescStatusByte / DataBytes * DataBytes;

  typedef enum logic [1:0] {PWait, PSem, PStatus} phase_e;
  typedef struct packed {
    logic          valid;
    phase_e        phase;
    logic [QW-1:0] qid;
    logic [23:0]   index;
    logic [47:0]   desc_addr;
    logic [47:0]   sem_addr;
    logic [15:0]   sem_value;
    logic          completion;
    logic          last;
    logic [31:0]   seq;   // write addresses issued when it was handed over
    logic          werr;  // one of its writes got an error response
  } pending_t;
  typedef struct packed {
    logic [31:0] aw;  // write addresses issued
    logic [31:0] b;   // write responses received
  } writes_t;

  pending_t p_q, p_d;
  writes_t  wr_q, wr_d;

  always_comb begin
    p_d  = p_q;
    wr_d = writes_t'{aw: wr_q.aw + 32'(aw_hs_i), b: wr_q.b + 32'(b_hs_i)};
    done_o = 1'b0;

    if (b_err_i && p_q.valid && b_queue_i == p_q.qid && b_index_i == p_q.index) begin
      p_d.werr = 1'b1;
    end
    if (p_q.valid) begin
      unique case (p_q.phase)
        PWait: begin
          // Every write issued up to the descriptor's last burst is acknowledged.
          if ($signed(wr_q.b - p_q.seq) >= 0) begin
            if (p_q.werr) begin
              p_d.valid = 1'b0;  // stopped: HEAD stays at this descriptor
            end else begin
              p_d.phase = p_q.completion ? PSem : PStatus;
            end
          end
        end
        PSem: if (aw_mine_i) p_d.phase = PStatus;
        PStatus: begin
          if (aw_mine_i) begin
            p_d.valid = 1'b0;
            done_o    = 1'b1;
          end
        end
        default: ;
      endcase
    end
    if (handoff_valid_i && handoff_ready_o) begin
      p_d = pending_t'{valid: 1'b1, phase: PWait, qid: handoff_queue_i, index: handoff_index_i,
              desc_addr: handoff_desc_addr_i, sem_addr: handoff_sem_addr_i,
              sem_value: handoff_sem_value_i, completion: handoff_completion_i,
              last: handoff_last_i, seq: wr_q.aw, werr: 1'b0};
    end
  end

  assign handoff_ready_o = !p_q.valid;
  assign valid_o         = p_q.valid;
  assign queue_o         = p_q.qid;
  assign done_queue_o    = p_q.qid;
  assign done_index_o    = p_q.index;
  assign done_last_o     = p_q.last;

  // The semaphore write adds sem_value at sem_addr; the status write puts
  // "done, no error" in the descriptor's status field.
  logic sem_phase;
  assign sem_phase = p_q.phase == PSem;
  assign aw_req_o  = p_q.valid && p_q.phase != PWait;
  assign aw_addr_o = sem_phase ? {16'b0, p_q.sem_addr[47:LaneW], {LaneW{1'b0}}} :
                     {16'b0, p_q.desc_addr[47:LaneW], {LaneW{1'b0}}} + 64'(StatusRowOffset);
  assign w_lane_o  = sem_phase ? p_q.sem_addr[LaneW-1:0] : LaneW'(DescStatusByte);
  assign w_bytes_o = sem_phase ? BurstW'(4) : BurstW'(2);
  assign w_value_o = sem_phase ? {16'b0, p_q.sem_value} :
                     (32'(ErrNone) << StatusCodeLsb) | (32'd1 << StatusDoneBit);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      p_q  <= '0;
      wr_q <= '0;
    end else begin
      p_q  <= p_d;
      wr_q <= wr_d;
    end
  end
endmodule
