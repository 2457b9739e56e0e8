// DMA engine fetch unit: picks the next ready queue round-robin, checks its
// ring, and reads the descriptor slot in one burst on the fetch ID while the
// current descriptor moves data, so a fetch latency is hidden per descriptor.
//
// It holds one fetched descriptor, offered on a valid/ready port to the
// engine's control; it fetches again once that one is taken. A descriptor of
// a queue the host rewound meanwhile (Q_HEAD written, or Q_CTRL error clear)
// is marked drop_o: the control discards it unrun.
module tsr_dma_fetch
  import tsr_dma_pkg::*;
  import tsr_dma_unit_pkg::*;
#(
  parameter int unsigned Queues    = 16,
  parameter int unsigned DataBytes = 64,
  localparam int unsigned QW         = (Queues > 1) ? $clog2(Queues) : 1,
  localparam int unsigned DataWidth  = DataBytes * 8,
  localparam int unsigned FetchBeats = DescBytes / DataBytes
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,

  // Registers
  input  logic                   eng_en_i,
  input  queue_t [Queues-1:0]    queues_i,
  input  logic [47:0]            win_base_i,
  input  logic [47:0]            win_limit_i,
  input  logic                   rewind_i,        // the host moved rewind_queue_i's fetch pointer
  input  logic [QW-1:0]          rewind_queue_i,
  output logic                   advance_o,       // advance advance_queue_o's fetch pointer
  output logic [QW-1:0]          advance_queue_o,

  // The fetch's read burst: AR request, its handshake, its R beats
  output logic                   ar_req_o,
  output logic [47:0]            ar_addr_o,
  input  logic                   ar_done_i,
  output logic                   r_expected_o,    // R beats on the fetch ID are due
  input  logic                   r_valid_i,
  input  logic [DataWidth-1:0]   r_data_i,
  input  logic                   r_err_i,

  // The fetched descriptor; code_o is a ring error found before any read
  output logic                   desc_valid_o,
  input  logic                   desc_ready_i,
  output logic [QW-1:0]          queue_o,
  output logic [23:0]            index_o,
  output logic [47:0]            addr_o,
  output logic [DescBytes*8-1:0] desc_o,
  output logic                   err_o,           // an R beat carried an error response
  output logic [7:0]             code_o,
  output logic                   drop_o,

  output logic                   busy_o
);
  typedef enum logic [1:0] {FbEmpty, FbAr, FbR, FbReady} state_e;
  typedef struct packed {
    state_e                          state;
    logic [QW-1:0]                   qid;
    logic [23:0]                     index;
    logic [47:0]                     addr;
    logic [DescBytes*8-1:0]          desc;
    logic [$clog2(FetchBeats+1)-1:0] beat;   // R beats received
    logic                            err;
    logic [7:0]                      code;
    logic                            drop;
  } fetch_t;

  fetch_t        fb_q, fb_d;
  logic [QW-1:0] rr_q, rr_d;  // last queue picked

  // ---------------------------------------------------------------------------
  // Round-robin pick among ready queues
  // ---------------------------------------------------------------------------
  logic [Queues-1:0] q_ready;
  logic              pick_valid;
  logic [QW-1:0]     pick;
  always_comb begin
    for (int q = 0; q < Queues; q++) begin
      q_ready[q] = queues_i[q].en && !queues_i[q].err && queues_i[q].next != queues_i[q].tail;
    end
    pick_valid = 1'b0;
    pick = '0;
    // Scanning downwards lets the nearest ready queue after rr_q win.
    for (int i = Queues; i >= 1; i--) begin
      if (q_ready[(32'(rr_q) + i) % Queues]) begin
        pick_valid = 1'b1;
        pick = QW'((32'(rr_q) + i) % Queues);
      end
    end
  end

  queue_t picked;
  logic   ring_bad, ring_in_window;
  always_comb begin
    picked   = queues_i[pick];
    ring_bad = picked.size == '0 || picked.next >= picked.size || picked.tail >= picked.size ||
               picked.base[5:0] != '0;
    ring_in_window = in_window({16'b0, picked.base},
                               {16'b0, picked.base} + {34'b0, picked.size, 6'b0} - 64'd1,
                               win_base_i, win_limit_i);
  end
  // The ring check reads the ring registers only.
  logic unused_picked;
  assign unused_picked = ^{picked.head, picked.info, picked.code, picked.en, picked.err,
                           picked.last};

  // ---------------------------------------------------------------------------
  // Next state
  // ---------------------------------------------------------------------------
  always_comb begin
    fb_d            = fb_q;
    rr_d            = rr_q;
    advance_o       = 1'b0;
    advance_queue_o = pick;

    if (rewind_i && fb_q.state != FbEmpty && fb_q.qid == rewind_queue_i) fb_d.drop = 1'b1;
    if (r_valid_i) begin
      fb_d.desc[DataWidth * 32'(fb_q.beat) +: DataWidth] = r_data_i;
      fb_d.beat = fb_q.beat + 1'b1;
      fb_d.err  = fb_q.err || r_err_i;
    end

    unique case (fb_q.state)
      FbEmpty: begin
        if (eng_en_i && pick_valid) begin
          fb_d.qid = pick;
          rr_d       = pick;
          fb_d.index = picked.next;
          fb_d.addr  = picked.base + 48'({picked.next, 6'b0});
          fb_d.beat  = '0;
          fb_d.err   = 1'b0;
          fb_d.drop  = 1'b0;
          fb_d.code  = ErrNone;
          if (ring_bad) begin
            fb_d.code  = ErrRing;
            fb_d.state = FbReady;
          end else if (!ring_in_window) begin
            fb_d.code  = ErrAddrWindow;
            fb_d.state = FbReady;
          end else begin
            advance_o  = 1'b1;
            fb_d.state = FbAr;
          end
        end
      end
      FbAr:    if (ar_done_i) fb_d.state = FbR;
      FbR:     if (32'(fb_q.beat) == FetchBeats) fb_d.state = FbReady;
      FbReady: if (desc_ready_i) fb_d.state = FbEmpty;
      default: ;
    endcase
  end

  assign ar_req_o     = fb_q.state == FbAr;
  assign ar_addr_o    = fb_q.addr;
  assign r_expected_o = fb_q.state == FbR;
  assign desc_valid_o = fb_q.state == FbReady;
  assign queue_o      = fb_q.qid;
  assign index_o      = fb_q.index;
  assign addr_o       = fb_q.addr;
  assign desc_o       = fb_q.desc;
  assign err_o        = fb_q.err;
  assign code_o       = fb_q.code;
  assign drop_o       = fb_q.drop;
  assign busy_o       = fb_q.state != FbEmpty;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      fb_q <= '0;
      rr_q <= QW'(Queues - 1);
    end else begin
      fb_q <= fb_d;
      rr_q <= rr_d;
    end
  end
endmodule
