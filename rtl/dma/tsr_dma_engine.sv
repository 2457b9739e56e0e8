// DMA engine: Queues descriptor rings served round-robin, one AXI4 manager port.
//
// One descriptor moves data at a time. Its source bursts are read (IDs 0 ..
// MaxOutstanding-1, out of order across IDs) into a byte buffer at positions
// reserved in stream order; destination bursts are issued once their bytes are
// in the buffer, so a write burst never waits on a read and a failed read never
// reaches memory. Writes are posted on one AXI ID (responses in order): when a
// descriptor has sent its last write beat it moves to the completion stage,
// which waits for its write responses, then writes the COMPLETION semaphore and
// the status word and advances HEAD, while the next descriptor already runs. A
// fetch unit reads the next descriptor while the current one moves data.
// A BARRIER descriptor waits for the completion stage and every write response
// before it reads. See docs/dma.md.
module tsr_dma_engine
  import tsr_dma_pkg::*;
#(
  parameter int unsigned Queues         = 16,
  parameter int unsigned DataBytes      = 64,    // AXI data width in bytes
  parameter int unsigned MaxOutstanding = 16,    // reads and writes each; power of two
  parameter int unsigned BufBytes       = 65536, // read-to-write buffer; power of two
  localparam int unsigned IdWidth   = $clog2(MaxOutstanding) + 1,
  localparam int unsigned DataWidth = DataBytes * 8
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,

  // Register port: a request is taken every cycle; read data the cycle after.
  input  logic                 reg_req_i,
  input  logic                 reg_we_i,
  input  logic [11:0]          reg_addr_i,
  input  logic [31:0]          reg_wdata_i,
  output logic [31:0]          reg_rdata_o,

  // AXI4 manager: write address
  output logic                 awvalid_o,
  input  logic                 awready_i,
  output logic [IdWidth-1:0]   awid_o,
  output logic [63:0]          awaddr_o,
  output logic [7:0]           awlen_o,
  output logic [2:0]           awsize_o,
  output logic [1:0]           awburst_o,
  // write data
  output logic                 wvalid_o,
  input  logic                 wready_i,
  output logic [DataWidth-1:0] wdata_o,
  output logic [DataBytes-1:0] wstrb_o,
  output logic                 wlast_o,
  // write response
  input  logic                 bvalid_i,
  output logic                 bready_o,
  input  logic [IdWidth-1:0]   bid_i,
  input  logic [1:0]           bresp_i,
  // read address
  output logic                 arvalid_o,
  input  logic                 arready_i,
  output logic [IdWidth-1:0]   arid_o,
  output logic [63:0]          araddr_o,
  output logic [7:0]           arlen_o,
  output logic [2:0]           arsize_o,
  output logic [1:0]           arburst_o,
  // read data
  input  logic                 rvalid_i,
  output logic                 rready_o,
  input  logic [IdWidth-1:0]   rid_i,
  input  logic [DataWidth-1:0] rdata_i,
  input  logic [1:0]           rresp_i,
  input  logic                 rlast_i,

  output logic                 busy_o
);
  `include "tsr_assert.svh"

  localparam int unsigned LaneW         = $clog2(DataBytes);
  localparam int unsigned SlotW         = $clog2(MaxOutstanding);
  localparam int unsigned QW            = (Queues > 1) ? $clog2(Queues) : 1;
  localparam int unsigned MaxBurstBytes = (256 * DataBytes < 4096) ? 256 * DataBytes : 4096;
  localparam int unsigned BurstW        = $clog2(MaxBurstBytes) + 1;
  localparam int unsigned Rows          = BufBytes / DataBytes;
  localparam int unsigned RowW          = $clog2(Rows);
  localparam int unsigned FetchBeats    = DescBytes / DataBytes;
  localparam logic [IdWidth-1:0] FetchId = IdWidth'(MaxOutstanding);
  localparam logic [IdWidth-1:0] WriteId = '0;
  localparam int unsigned StatusRowOffset = DescStatusByte / DataBytes * DataBytes;

  // ---------------------------------------------------------------------------
  // State
  // ---------------------------------------------------------------------------
  typedef enum logic [3:0] {
    StIdle, StDecode, StBarrier, StRun, StDrain, StHandoff, StFinish
  } state_e;
  state_e state_q, state_d;

  // Global registers
  logic        eng_en_q, eng_en_d;
  logic [7:0]  rd_limit_q, rd_limit_d, wr_limit_q, wr_limit_d;
  logic [47:0] win_base_q, win_base_d, win_limit_q, win_limit_d;

  // Queue registers
  logic [Queues-1:0][47:0] q_base_q, q_base_d;
  logic [Queues-1:0][23:0] q_size_q, q_size_d, q_head_q, q_head_d, q_tail_q, q_tail_d;
  logic [Queues-1:0][23:0] q_info_q, q_info_d;
  logic [Queues-1:0][23:0] q_next_q, q_next_d;  // next descriptor to fetch (HEAD: next to complete)
  logic [Queues-1:0][7:0]  q_code_q, q_code_d;
  logic [Queues-1:0]       q_en_q, q_en_d, q_err_q, q_err_d, q_last_q, q_last_d;

  // Current descriptor
  logic [QW-1:0]          cur_q_q, cur_q_d;     // queue being served
  logic [23:0]            cur_idx_q, cur_idx_d; // its ring index
  logic [QW-1:0]          rr_q, rr_d;           // last queue served
  logic [47:0]            desc_addr_q, desc_addr_d;
  logic [DescBytes*8-1:0] desc_q, desc_d;
  logic                   fetch_err_q, fetch_err_d;

  // Fetch unit: fetches the next descriptor (round-robin over ready queues)
  // while the current one runs, so a fetch latency is hidden per descriptor.
  typedef enum logic [1:0] {FbEmpty, FbAr, FbR, FbReady} fb_state_e;
  fb_state_e              fb_state_q, fb_state_d;
  logic [QW-1:0]          fb_queue_q, fb_queue_d;
  logic [23:0]            fb_idx_q, fb_idx_d;
  logic [47:0]            fb_addr_q, fb_addr_d;
  logic [DescBytes*8-1:0] fb_desc_q, fb_desc_d;
  logic [$clog2(FetchBeats+1)-1:0] fb_beat_q, fb_beat_d;
  logic                   fb_err_q, fb_err_d;    // error response on the fetch
  logic [7:0]             fb_code_q, fb_code_d;  // ring error found before fetching
  logic                   fb_drop_q, fb_drop_d;  // host rewound the queue: discard
  logic [7:0]             err_code_q, err_code_d;  // result of the current descriptor
  desc_t                  desc;
  assign desc = desc_t'(desc_q);

  // Stream positions (bytes since the descriptor started)
  logic [31:0] rsv_q, rsv_d;   // reserved by issued reads
  logic [31:0] cmt_q, cmt_d;   // read back, in order, without error
  logic [31:0] awp_q, awp_d;   // claimed by issued write bursts
  logic [31:0] cons_q, cons_d; // sent on W
  logic        rd_err_q, rd_err_d;

  // Read slots, allocated in issue order; slot index = ARID
  logic [SlotW:0] alloc_q, alloc_d, retire_q, retire_d;
  logic [MaxOutstanding-1:0][31:0]       slot_ptr_q, slot_ptr_d;
  logic [MaxOutstanding-1:0][BurstW-1:0] slot_len_q, slot_len_d, slot_rem_q, slot_rem_d;
  logic [MaxOutstanding-1:0][LaneW-1:0]  slot_lane_q, slot_lane_d;
  logic [MaxOutstanding-1:0]             slot_done_q, slot_done_d, slot_err_q, slot_err_d;

  // Write bursts issued on AW whose W beats are not all sent
  typedef struct packed {
    logic              imm;    // immediate value (semaphore, status), not buffer data
    logic [LaneW-1:0]  lane;   // lane of the first byte
    logic [BurstW-1:0] bytes;
    logic [31:0]       value;
  } wq_entry_t;
  localparam int unsigned WqW = SlotW + 1;
  wq_entry_t [MaxOutstanding-1:0] wq_q, wq_d;
  logic [WqW-1:0] wq_wr_q, wq_wr_d, wq_rd_q, wq_rd_d;
  logic           w_started_q, w_started_d;
  logic [BurstW-1:0] w_rem_q, w_rem_d;
  logic [8:0]     w_beat_q, w_beat_d;

  // Outstanding writes: their owner, for error attribution (responses in order)
  logic [MaxOutstanding-1:0][QW-1:0]  tag_q_q, tag_q_d;
  logic [MaxOutstanding-1:0][23:0]    tag_idx_q, tag_idx_d;
  logic [WqW-1:0] tag_wr_q, tag_wr_d, tag_rd_q, tag_rd_d;
  logic [8:0]     out_wr_q, out_wr_d;

  // AXI hold: once valid, a channel keeps valid and payload until ready
  logic ar_hold_q, ar_hold_d, aw_hold_q, aw_hold_d;
  logic ar_own_f_q, ar_own_f_d;  // the held AR is a descriptor fetch
  logic aw_own_p_q, aw_own_p_d;  // the held AW belongs to the completion stage

  // Write addresses issued and responses received, to tell when the writes of a
  // descriptor are all acknowledged (responses arrive in order on one ID)
  logic [31:0] aw_cnt_q, aw_cnt_d, b_cnt_q, b_cnt_d;

  // Completion stage: one descriptor whose data is sent, waiting for its write
  // responses before its semaphore and status writes
  typedef enum logic [1:0] {PWait, PSem, PStatus} p_phase_e;
  logic          p_valid_q, p_valid_d;
  p_phase_e      p_phase_q, p_phase_d;
  logic [QW-1:0] p_queue_q, p_queue_d;
  logic [23:0]   p_index_q, p_index_d;
  logic [47:0]   p_desc_addr_q, p_desc_addr_d;
  logic [47:0]   p_sem_addr_q, p_sem_addr_d;
  logic [15:0]   p_sem_value_q, p_sem_value_d;
  logic          p_completion_q, p_completion_d, p_last_q, p_last_d;
  logic [31:0]   p_seq_q, p_seq_d;  // aw_cnt when its last data burst was issued
  logic          p_werr_q, p_werr_d;  // one of its writes got an error response

  // ---------------------------------------------------------------------------
  // Walkers
  // ---------------------------------------------------------------------------
  logic walk_start;
  logic src_valid, src_ready, src_done, dst_valid, dst_ready, dst_done;
  logic [47:0] src_addr, dst_addr;
  logic [BurstW-1:0] src_bytes, dst_bytes;

  tsr_dma_walker #(.MaxBurstBytes(MaxBurstBytes)) u_src (
    .clk_i, .rst_ni,
    .start_i(walk_start), .base_i(desc.src_addr), .size_i(desc.src_size),
    .stride_i(desc.src_stride), .elem_log2_i(desc.elem_log2),
    .burst_valid_o(src_valid), .burst_ready_i(src_ready), .burst_addr_o(src_addr),
    .burst_bytes_o(src_bytes), .done_o(src_done));

  tsr_dma_walker #(.MaxBurstBytes(MaxBurstBytes)) u_dst (
    .clk_i, .rst_ni,
    .start_i(walk_start), .base_i(desc.dst_addr), .size_i(desc.dst_size),
    .stride_i(desc.dst_stride), .elem_log2_i(desc.elem_log2),
    .burst_valid_o(dst_valid), .burst_ready_i(dst_ready), .burst_addr_o(dst_addr),
    .burst_bytes_o(dst_bytes), .done_o(dst_done));

  // ---------------------------------------------------------------------------
  // Descriptor checks (combinational on the fetched descriptor)
  // ---------------------------------------------------------------------------
  logic [63:0] src_elems, dst_elems;
  logic [79:0] total_bytes;
  logic [63:0] src_last, dst_last;
  logic        any_zero, in_window, malformed;

  function automatic logic [63:0] pattern_last(logic [47:0] base, logic [3:0][15:0] size,
                                               logic [3:0][23:0] stride, logic [3:0] elog2);
    logic [63:0] last;
    last = {16'b0, base} + (64'd1 << elog2) - 64'd1;
    for (int k = 0; k < 4; k++) begin
      last = last + ({48'b0, size[k]} - 64'd1) * {40'b0, stride[k]};
    end
    return last;
  endfunction

  function automatic logic in_win(logic [63:0] lo, logic [63:0] hi_incl, logic [47:0] wb,
                                  logic [47:0] wl);
    return lo >= {16'b0, wb} && hi_incl < {16'b0, wl} && hi_incl >= lo;
  endfunction

  always_comb begin
    src_elems = {48'b0, desc.src_size[0]} * {48'b0, desc.src_size[1]} *
                {48'b0, desc.src_size[2]} * {48'b0, desc.src_size[3]};
    dst_elems = {48'b0, desc.dst_size[0]} * {48'b0, desc.dst_size[1]} *
                {48'b0, desc.dst_size[2]} * {48'b0, desc.dst_size[3]};
    total_bytes = {16'b0, src_elems} << desc.elem_log2;
    any_zero = 1'b0;
    for (int k = 0; k < 4; k++) begin
      any_zero |= desc.src_size[k] == '0 || desc.dst_size[k] == '0;
    end
    malformed = desc.flags[3] || src_elems != dst_elems || total_bytes[79:32] != '0 ||
                (desc.flags[FlagCompletionBit] && desc.sem_addr[1:0] != 2'b0);
    src_last = pattern_last(desc.src_addr, desc.src_size, desc.src_stride, desc.elem_log2);
    dst_last = pattern_last(desc.dst_addr, desc.dst_size, desc.dst_stride, desc.elem_log2);
    in_window = in_win({16'b0, desc.src_addr}, src_last, win_base_q, win_limit_q) &&
                in_win({16'b0, desc.dst_addr}, dst_last, win_base_q, win_limit_q) &&
                (!desc.flags[FlagCompletionBit] ||
                 in_win({16'b0, desc.sem_addr}, {16'b0, desc.sem_addr} + 64'd3, win_base_q,
                        win_limit_q));
  end

  // ---------------------------------------------------------------------------
  // Round-robin pick among ready queues
  // ---------------------------------------------------------------------------
  logic [Queues-1:0] q_ready;
  logic              pick_valid;
  logic [QW-1:0]     pick;
  always_comb begin
    for (int q = 0; q < Queues; q++) begin
      q_ready[q] = q_en_q[q] && !q_err_q[q] && q_next_q[q] != q_tail_q[q];
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

  // ---------------------------------------------------------------------------
  // Channel handshakes and stream arithmetic
  // ---------------------------------------------------------------------------
  logic ar_hs, aw_hs, w_hs, b_hs, r_hs, r_data, r_fetch;
  assign ar_hs = arvalid_o && arready_i;
  assign aw_hs = awvalid_o && awready_i;
  assign w_hs  = wvalid_o && wready_i;
  assign b_hs  = bvalid_i && bready_o;
  assign r_hs  = rvalid_i && rready_o;
  assign r_fetch = r_hs && rid_i == FetchId;
  assign r_data  = r_hs && rid_i != FetchId;

  logic [SlotW-1:0] alloc_idx, retire_idx, r_slot;
  assign alloc_idx  = alloc_q[SlotW-1:0];
  assign retire_idx = retire_q[SlotW-1:0];
  assign r_slot     = rid_i[SlotW-1:0];

  logic [7:0] rd_lim, wr_lim;
  assign rd_lim = (rd_limit_q == '0 || rd_limit_q > 8'(MaxOutstanding)) ? 8'(MaxOutstanding) :
                                                                            rd_limit_q;
  assign wr_lim = (wr_limit_q == '0 || wr_limit_q > 8'(MaxOutstanding)) ? 8'(MaxOutstanding) :
                                                                            wr_limit_q;

  logic [SlotW:0] rd_outstanding;
  logic [WqW-1:0] wq_count;
  logic           wq_empty, wq_full;
  assign rd_outstanding = alloc_q - retire_q;
  assign wq_count = wq_wr_q - wq_rd_q;
  assign wq_empty = wq_count == '0;
  assign wq_full  = wq_count == WqW'(MaxOutstanding);

  logic run_phase;   // data bursts may be issued
  logic aborting;    // the current descriptor has failed: issue nothing new
  assign run_phase = state_q == StRun || state_q == StDrain;
  assign aborting  = rd_err_q || q_err_q[cur_q_q] || state_q == StDrain;

  // Read data beat: bytes it carries and where they go in the stream
  logic [LaneW-1:0]  r_lane;
  logic [BurstW-1:0] r_bytes;
  logic [31:0]       r_ptr;
  always_comb begin
    r_lane  = slot_lane_q[r_slot];
    r_ptr   = slot_ptr_q[r_slot];
    r_bytes = ((BurstW)'(DataBytes) - BurstW'(r_lane) < slot_rem_q[r_slot]) ?
              (BurstW)'(DataBytes) - BurstW'(r_lane) : slot_rem_q[r_slot];
  end

  // Write data beat
  wq_entry_t         w_head;
  logic [LaneW-1:0]  w_lane;
  logic [BurstW-1:0] w_rem, w_bytes;
  logic              w_last;
  always_comb begin
    w_head  = wq_q[wq_rd_q[SlotW-1:0]];
    w_lane  = w_started_q ? '0 : w_head.lane;
    w_rem   = w_started_q ? w_rem_q : w_head.bytes;
    w_bytes = ((BurstW)'(DataBytes) - BurstW'(w_lane) < w_rem) ?
              (BurstW)'(DataBytes) - BurstW'(w_lane) : w_rem;
    w_last  = w_bytes == w_rem;
  end

  function automatic logic [7:0] beats_of(logic [LaneW-1:0] lane, logic [BurstW-1:0] bytes);
    logic [BurstW:0] span;
    span = (BurstW + 1)'(lane) + (BurstW + 1)'(bytes) + (BurstW + 1)'(DataBytes - 1);
    return 8'((32'(span) >> LaneW) - 32'd1);
  endfunction

  // ---------------------------------------------------------------------------
  // Byte buffer: one bank per lane so every lane has its own write port. The
  // banks are RAMs (write enable, no reset: their contents never matter after
  // reset) read asynchronously.
  // ---------------------------------------------------------------------------
  logic [DataBytes-1:0][7:0] bank_rdata;
  for (genvar b = 0; b < DataBytes; b++) begin : gen_banks
    logic [7:0]      mem_q [Rows];
    logic [LaneW-1:0] wr_off, rd_off;
    logic [31:0]     wr_pos, rd_pos;
    logic            we;
    logic [7:0]      wbyte;
    always_comb begin
      wr_off = LaneW'(b) - r_ptr[LaneW-1:0];
      wr_pos = r_ptr + 32'(wr_off);
      we     = r_data && BurstW'(wr_off) < r_bytes;
      wbyte  = rdata_i[8 * 32'(LaneW'(32'(r_lane) + 32'(wr_off))) +: 8];
      rd_off = LaneW'(b) - cons_q[LaneW-1:0];
      rd_pos = cons_q + 32'(rd_off);
    end
    always_ff @(posedge clk_i) begin
      if (we) begin
        mem_q[wr_pos[LaneW +: RowW]] <= wbyte;
      end
    end
    assign bank_rdata[b] = mem_q[rd_pos[LaneW +: RowW]];
    // Positions are stream offsets; only the row bits select a buffer entry.
    logic unused_pos;
    assign unused_pos = ^{wr_pos[31:LaneW+RowW], wr_pos[LaneW-1:0], rd_pos[31:LaneW+RowW],
                          rd_pos[LaneW-1:0]};
  end

  always_comb begin
    wdata_o = '0;
    wstrb_o = '0;
    if (w_head.imm) begin
      wdata_o = DataWidth'({32'b0, w_head.value}) << (8 * 32'(w_head.lane));
      for (int l = 0; l < DataBytes; l++) begin
        wstrb_o[l] = l >= 32'(w_head.lane) && l < 32'(w_head.lane) + 32'(w_head.bytes);
      end
    end else begin
      for (int l = 0; l < DataBytes; l++) begin
        if (l >= 32'(w_lane) && l < 32'(w_lane) + 32'(w_bytes)) begin
          wstrb_o[l] = 1'b1;
          wdata_o[8 * l +: 8] = bank_rdata[LaneW'(cons_q[LaneW-1:0] - w_lane + LaneW'(l))];
        end
      end
    end
  end
  assign wvalid_o = !wq_empty;
  assign wlast_o  = w_last;

  // ---------------------------------------------------------------------------
  // AR and AW channels
  // ---------------------------------------------------------------------------
  logic data_ar_ok, data_aw_ok, p_aw_req, aw_own_p, ar_own_f;
  always_comb begin
    data_ar_ok = run_phase && src_valid && !aborting &&
                 8'(rd_outstanding) < rd_lim &&
                 (rsv_q - cons_q) + 32'(src_bytes) <= 32'(BufBytes);
    data_aw_ok = run_phase && dst_valid && !aborting && !wq_full &&
                 out_wr_q < 9'(wr_lim) && (cmt_q - awp_q) >= 32'(dst_bytes);

    // A descriptor fetch goes first between data bursts; a held request keeps its owner.
    ar_own_f  = ar_hold_q ? ar_own_f_q : fb_state_q == FbAr;
    arvalid_o = ar_hold_q || fb_state_q == FbAr || data_ar_ok;
    arid_o    = IdWidth'(alloc_idx);
    araddr_o  = {16'b0, src_addr[47:LaneW], {LaneW{1'b0}}};
    arlen_o   = beats_of(src_addr[LaneW-1:0], src_bytes);
    if (ar_own_f) begin
      arid_o   = FetchId;
      araddr_o = {16'b0, fb_addr_q};
      arlen_o  = 8'(FetchBeats - 1);
    end

    // The completion stage goes first between bursts; a held request keeps its owner.
    p_aw_req = p_valid_q && p_phase_q != PWait && !wq_full && out_wr_q < 9'(wr_lim);
    aw_own_p = aw_hold_q ? aw_own_p_q : p_aw_req;
    awvalid_o = aw_hold_q || p_aw_req || data_aw_ok;
    awaddr_o  = {16'b0, dst_addr[47:LaneW], {LaneW{1'b0}}};
    awlen_o   = beats_of(dst_addr[LaneW-1:0], dst_bytes);
    if (aw_own_p) begin
      awlen_o  = '0;
      awaddr_o = (p_phase_q == PSem) ? {16'b0, p_sem_addr_q[47:LaneW], {LaneW{1'b0}}} :
                 {16'b0, p_desc_addr_q[47:LaneW], {LaneW{1'b0}}} + 64'(StatusRowOffset);
    end
  end
  assign arsize_o  = 3'(LaneW);
  assign arburst_o = 2'b01;  // INCR
  assign awid_o    = WriteId;
  assign awsize_o  = 3'(LaneW);
  assign awburst_o = 2'b01;
  assign rready_o  = 1'b1;   // every read has buffer space reserved at issue
  assign bready_o  = 1'b1;

  assign src_ready = ar_hs && !ar_own_f;
  assign dst_ready = aw_hs && !aw_own_p;

  // ---------------------------------------------------------------------------
  // Next state
  // ---------------------------------------------------------------------------
  logic [QW-1:0] reg_q;
  logic        reg_is_queue;
  assign reg_is_queue = reg_addr_i >= RegQueueBase &&
                        reg_addr_i < RegQueueBase + 12'(Queues * RegQueueStride);
  assign reg_q = QW'((reg_addr_i - RegQueueBase) >> 5);

  logic desc_done;       // a descriptor finished without error this cycle
  logic cnt_clear;

  always_comb begin
    state_d      = state_q;
    eng_en_d     = eng_en_q;
    rd_limit_d   = rd_limit_q;
    wr_limit_d   = wr_limit_q;
    win_base_d   = win_base_q;
    win_limit_d  = win_limit_q;
    q_base_d     = q_base_q;
    q_size_d     = q_size_q;
    q_head_d     = q_head_q;
    q_tail_d     = q_tail_q;
    q_info_d     = q_info_q;
    q_next_d     = q_next_q;
    cur_idx_d    = cur_idx_q;
    aw_own_p_d   = aw_own_p;
    aw_cnt_d     = aw_cnt_q + 32'(aw_hs);
    b_cnt_d      = b_cnt_q + 32'(b_hs);
    p_valid_d    = p_valid_q;
    p_phase_d    = p_phase_q;
    p_queue_d    = p_queue_q;
    p_index_d    = p_index_q;
    p_desc_addr_d = p_desc_addr_q;
    p_sem_addr_d = p_sem_addr_q;
    p_sem_value_d = p_sem_value_q;
    p_completion_d = p_completion_q;
    p_last_d     = p_last_q;
    p_seq_d      = p_seq_q;
    p_werr_d     = p_werr_q;
    q_code_d     = q_code_q;
    q_en_d       = q_en_q;
    q_err_d      = q_err_q;
    q_last_d     = q_last_q;
    cur_q_d      = cur_q_q;
    rr_d         = rr_q;
    desc_addr_d  = desc_addr_q;
    desc_d       = desc_q;
    fetch_err_d  = fetch_err_q;
    fb_state_d   = fb_state_q;
    fb_queue_d   = fb_queue_q;
    fb_idx_d     = fb_idx_q;
    fb_addr_d    = fb_addr_q;
    fb_desc_d    = fb_desc_q;
    fb_beat_d    = fb_beat_q;
    fb_err_d     = fb_err_q;
    fb_code_d    = fb_code_q;
    fb_drop_d    = fb_drop_q;
    ar_own_f_d   = ar_own_f;
    err_code_d   = err_code_q;
    rsv_d        = rsv_q;
    cmt_d        = cmt_q;
    awp_d        = awp_q;
    cons_d       = cons_q;
    rd_err_d     = rd_err_q;
    alloc_d      = alloc_q;
    retire_d     = retire_q;
    slot_ptr_d   = slot_ptr_q;
    slot_len_d   = slot_len_q;
    slot_rem_d   = slot_rem_q;
    slot_lane_d  = slot_lane_q;
    slot_done_d  = slot_done_q;
    slot_err_d   = slot_err_q;
    wq_d         = wq_q;
    wq_wr_d      = wq_wr_q;
    wq_rd_d      = wq_rd_q;
    w_started_d  = w_started_q;
    w_rem_d      = w_rem_q;
    w_beat_d     = w_beat_q;
    tag_q_d      = tag_q_q;
    tag_idx_d    = tag_idx_q;
    tag_wr_d     = tag_wr_q;
    tag_rd_d     = tag_rd_q;
    out_wr_d     = out_wr_q;
    ar_hold_d    = arvalid_o && !arready_i;
    aw_hold_d    = awvalid_o && !awready_i;
    walk_start   = 1'b0;
    desc_done    = 1'b0;
    cnt_clear    = 1'b0;

    // Register writes
    if (reg_req_i && reg_we_i) begin
      if (reg_is_queue) begin
        unique case ({7'b0, reg_addr_i[4:0]})
          RegQBaseLo: q_base_d[reg_q][31:0]  = reg_wdata_i;
          RegQBaseHi: q_base_d[reg_q][47:32] = reg_wdata_i[15:0];
          RegQSize:   q_size_d[reg_q]        = reg_wdata_i[23:0];
          RegQHead: begin
            q_head_d[reg_q] = reg_wdata_i[23:0];
            q_next_d[reg_q] = reg_wdata_i[23:0];
            fb_drop_d = fb_drop_q || (fb_state_q != FbEmpty && fb_queue_q == reg_q);
          end
          RegQTail:   q_tail_d[reg_q]        = reg_wdata_i[23:0];
          RegQCtrl: begin
            q_en_d[reg_q] = reg_wdata_i[0];
            if (reg_wdata_i[1]) begin
              q_next_d[reg_q] = q_head_q[reg_q];
              fb_drop_d = fb_drop_q || (fb_state_q != FbEmpty && fb_queue_q == reg_q);
              q_err_d[reg_q]  = 1'b0;
              q_code_d[reg_q] = ErrNone;
              q_last_d[reg_q] = 1'b0;
            end
          end
          default: ;
        endcase
      end else begin
        unique case (reg_addr_i)
          RegCtrl: begin
            eng_en_d   = reg_wdata_i[0];
            rd_limit_d = reg_wdata_i[15:8];
            wr_limit_d = reg_wdata_i[23:16];
          end
          RegWinBaseLo:  win_base_d[31:0]   = reg_wdata_i;
          RegWinBaseHi:  win_base_d[47:32]  = reg_wdata_i[15:0];
          RegWinLimitLo: win_limit_d[31:0]  = reg_wdata_i;
          RegWinLimitHi: win_limit_d[47:32] = reg_wdata_i[15:0];
          RegCntClear:   cnt_clear = 1'b1;
          default: ;
        endcase
      end
    end

    // Read channel: descriptor fetch beats and data beats
    if (r_fetch) begin
      fb_desc_d[DataWidth * 32'(fb_beat_q) +: DataWidth] = rdata_i;
      fb_beat_d = fb_beat_q + 1'b1;
      fb_err_d  = fb_err_q || rresp_i[1];
    end
    if (r_data) begin
      slot_ptr_d[r_slot]  = r_ptr + 32'(r_bytes);
      slot_rem_d[r_slot]  = slot_rem_q[r_slot] - r_bytes;
      slot_lane_d[r_slot] = '0;
      slot_err_d[r_slot]  = slot_err_q[r_slot] || rresp_i[1];
      if (rlast_i) begin
        slot_done_d[r_slot] = 1'b1;
      end
    end
    // Retire the oldest read in order; only error-free data before any error commits
    if (rd_outstanding != '0 && slot_done_q[retire_idx]) begin
      retire_d = retire_q + 1'b1;
      slot_done_d[retire_idx] = 1'b0;
      if (slot_err_q[retire_idx] || rd_err_q) begin
        rd_err_d = 1'b1;
      end else begin
        cmt_d = cmt_q + 32'(slot_len_q[retire_idx]);
      end
      slot_err_d[retire_idx] = 1'b0;
    end
    if (ar_hs && !ar_own_f) begin
      slot_ptr_d[alloc_idx]  = rsv_q;
      slot_len_d[alloc_idx]  = src_bytes;
      slot_rem_d[alloc_idx]  = src_bytes;
      slot_lane_d[alloc_idx] = src_addr[LaneW-1:0];
      slot_done_d[alloc_idx] = 1'b0;
      slot_err_d[alloc_idx]  = 1'b0;
      alloc_d = alloc_q + 1'b1;
      rsv_d   = rsv_q + 32'(src_bytes);
    end

    // Write address: queue the W work and the owner of the response
    if (aw_hs) begin
      wq_entry_t e;
      e.imm   = aw_own_p;
      e.lane  = !aw_own_p ? dst_addr[LaneW-1:0] :
                (p_phase_q == PSem) ? p_sem_addr_q[LaneW-1:0] : LaneW'(DescStatusByte);
      e.bytes = !aw_own_p ? dst_bytes : (p_phase_q == PSem) ? BurstW'(4) : BurstW'(2);
      e.value = (p_phase_q == PSem) ? {16'b0, p_sem_value_q} :
                (32'(ErrNone) << StatusCodeLsb) | (32'd1 << StatusDoneBit);
      wq_d[wq_wr_q[SlotW-1:0]] = e;
      wq_wr_d = wq_wr_q + 1'b1;
      if (!aw_own_p) begin
        awp_d = awp_q + 32'(dst_bytes);
      end
      tag_q_d[tag_wr_q[SlotW-1:0]]   = aw_own_p ? p_queue_q : cur_q_q;
      tag_idx_d[tag_wr_q[SlotW-1:0]] = aw_own_p ? p_index_q : cur_idx_q;
      tag_wr_d = tag_wr_q + 1'b1;
    end
    // Write data
    if (w_hs) begin
      if (!w_head.imm) begin
        cons_d = cons_q + 32'(w_bytes);
      end
      w_started_d = !w_last;
      w_rem_d     = w_rem - w_bytes;
      w_beat_d    = w_last ? '0 : w_beat_q + 1'b1;
      if (w_last) begin
        wq_rd_d = wq_rd_q + 1'b1;
      end
    end
    // Write response: an error stops the queue that issued the write
    if (b_hs) begin
      tag_rd_d = tag_rd_q + 1'b1;
      if (bresp_i[1] && !q_err_q[tag_q_q[tag_rd_q[SlotW-1:0]]]) begin
        q_err_d[tag_q_q[tag_rd_q[SlotW-1:0]]]  = 1'b1;
        q_code_d[tag_q_q[tag_rd_q[SlotW-1:0]]] = ErrWriteResp;
        q_info_d[tag_q_q[tag_rd_q[SlotW-1:0]]] = tag_idx_q[tag_rd_q[SlotW-1:0]];
      end
      if (bresp_i[1] && p_valid_q && tag_q_q[tag_rd_q[SlotW-1:0]] == p_queue_q &&
          tag_idx_q[tag_rd_q[SlotW-1:0]] == p_index_q) begin
        p_werr_d = 1'b1;
      end
    end

    // Completion stage
    if (p_valid_q) begin
      unique case (p_phase_q)
        PWait: begin
          // Every write issued up to the descriptor's last burst is acknowledged.
          if ($signed(b_cnt_q - p_seq_q) >= 0) begin
            if (p_werr_q) begin
              p_valid_d = 1'b0;  // stopped: HEAD stays at this descriptor
            end else begin
              p_phase_d = p_completion_q ? PSem : PStatus;
            end
          end
        end
        PSem: if (aw_hs && aw_own_p) p_phase_d = PStatus;
        PStatus: begin
          if (aw_hs && aw_own_p) begin
            p_valid_d = 1'b0;
            q_head_d[p_queue_q] = (p_index_q + 24'd1 == q_size_q[p_queue_q]) ? '0 :
                                  p_index_q + 24'd1;
            desc_done = 1'b1;
            if (p_last_q) begin
              q_last_d[p_queue_q] = 1'b1;
            end
          end
        end
        default: ;
      endcase
    end
    out_wr_d = out_wr_q + 9'(aw_hs) - 9'(b_hs);

    // Fetch unit. Picking a queue moves its fetch pointer; an error rewinds it
    // to HEAD when the host clears the error.
    unique case (fb_state_q)
      FbEmpty: begin
        if (eng_en_q && pick_valid) begin
          fb_queue_d = pick;
          rr_d       = pick;
          fb_idx_d   = q_next_q[pick];
          fb_addr_d  = q_base_q[pick] + 48'({q_next_q[pick], 6'b0});
          fb_beat_d  = '0;
          fb_err_d   = 1'b0;
          fb_drop_d  = 1'b0;
          fb_code_d  = ErrNone;
          if (q_size_q[pick] == '0 || q_next_q[pick] >= q_size_q[pick] ||
              q_tail_q[pick] >= q_size_q[pick] || q_base_q[pick][5:0] != '0) begin
            fb_code_d  = ErrRing;
            fb_state_d = FbReady;
          end else if (!in_win({16'b0, q_base_q[pick]},
                               {16'b0, q_base_q[pick]} + {34'b0, q_size_q[pick], 6'b0} - 64'd1,
                               win_base_q, win_limit_q)) begin
            fb_code_d  = ErrAddrWindow;
            fb_state_d = FbReady;
          end else begin
            q_next_d[pick] = (q_next_q[pick] + 24'd1 == q_size_q[pick]) ? '0 :
                             q_next_q[pick] + 24'd1;
            fb_state_d = FbAr;
          end
        end
      end
      FbAr: if (ar_hs && ar_own_f) fb_state_d = FbR;
      FbR:  if (32'(fb_beat_q) == FetchBeats) fb_state_d = FbReady;
      default: ;
    endcase

    // Control
    unique case (state_q)
      StIdle: begin
        if (fb_state_q == FbReady) begin
          fb_state_d = FbEmpty;
          // A descriptor of a stopped or rewound queue is dropped unrun.
          if (!fb_drop_q && !q_err_q[fb_queue_q]) begin
            cur_q_d     = fb_queue_q;
            cur_idx_d   = fb_idx_q;
            desc_addr_d = fb_addr_q;
            desc_d      = fb_desc_q;
            fetch_err_d = fb_err_q;
            err_code_d  = fb_code_q;
            state_d     = (fb_code_q != ErrNone) ? StFinish : StDecode;
          end
        end
      end
      StDecode: begin
        rsv_d  = '0;
        cmt_d  = '0;
        awp_d  = '0;
        cons_d = '0;
        rd_err_d = 1'b0;
        if (fetch_err_q) begin
          err_code_d = ErrFetch;
          state_d    = StFinish;
        end else if (desc.magic != DescMagic) begin
          err_code_d = ErrMagic;
          state_d    = StFinish;
        end else if (any_zero) begin
          err_code_d = ErrZeroLength;
          state_d    = StFinish;
        end else if (malformed) begin
          err_code_d = ErrMalformed;
          state_d    = StFinish;
        end else if (!in_window) begin
          err_code_d = ErrAddrWindow;
          state_d    = StFinish;
        end else begin
          walk_start = 1'b1;
          state_d    = desc.flags[FlagBarrierBit] ? StBarrier : StRun;
        end
      end
      StBarrier: if (out_wr_q == '0 && !p_valid_q) state_d = StRun;
      StRun: begin
        if (aborting) begin
          state_d = StDrain;
        end else if (src_done && dst_done && rd_outstanding == '0 && wq_empty) begin
          state_d = StHandoff;
        end
      end
      StDrain: begin
        // Let issued reads return and issued write bursts send their beats.
        if (!ar_hold_q && !aw_hold_q && rd_outstanding == '0 && wq_empty) begin
          err_code_d = q_err_q[cur_q_q] ? q_code_q[cur_q_q] : ErrReadResp;
          state_d    = StFinish;
        end
      end
      StHandoff: begin
        // Data sent; hand the descriptor to the completion stage once it is free.
        if (q_err_q[cur_q_q]) begin
          err_code_d = q_code_q[cur_q_q];
          state_d    = StFinish;
        end else if (!p_valid_q) begin
          p_valid_d      = 1'b1;
          p_phase_d      = PWait;
          p_queue_d      = cur_q_q;
          p_index_d      = cur_idx_q;
          p_desc_addr_d  = desc_addr_q;
          p_sem_addr_d   = desc.sem_addr;
          p_sem_value_d  = desc.sem_value;
          p_completion_d = desc.flags[FlagCompletionBit];
          p_last_d       = desc.flags[FlagLastBit];
          p_seq_d        = aw_cnt_q;
          p_werr_d       = 1'b0;
          state_d        = StIdle;
        end
      end
      StFinish: begin
        // A failed descriptor: stop its queue unless an earlier error already did.
        state_d = StIdle;
        if (!q_err_q[cur_q_q]) begin
          q_err_d[cur_q_q]  = 1'b1;
          q_code_d[cur_q_q] = err_code_q;
          q_info_d[cur_q_q] = cur_idx_q;
        end
      end
      default: state_d = StIdle;
    endcase
  end

  // ---------------------------------------------------------------------------
  // Performance counters
  // ---------------------------------------------------------------------------
  logic [63:0] bytes_rd_q, bytes_rd_d, bytes_wr_q, bytes_wr_d;
  logic [63:0] cnt_done, cnt_busy, cnt_stall;
  logic        busy;
  assign busy = state_q != StIdle || p_valid_q || fb_state_q != FbEmpty || out_wr_q != '0 ||
                !wq_empty || rd_outstanding != '0;
  assign busy_o = busy;

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
      if (r_data && !rresp_i[1]) bytes_rd_d = sat_add(bytes_rd_q, 64'(r_bytes));
      if (w_hs && !w_head.imm)   bytes_wr_d = sat_add(bytes_wr_q, 64'(w_bytes));
    end
  end

  /* verilator lint_off PINCONNECTEMPTY */
  tsr_counter #(.Width(64)) u_cnt_done (
    .clk_i, .rst_ni, .clear_i(cnt_clear), .incr_i(desc_done), .count_o(cnt_done),
    .saturated_o());
  tsr_counter #(.Width(64)) u_cnt_busy (
    .clk_i, .rst_ni, .clear_i(cnt_clear), .incr_i(busy), .count_o(cnt_busy), .saturated_o());
  tsr_counter #(.Width(64)) u_cnt_stall (
    .clk_i, .rst_ni, .clear_i(cnt_clear), .incr_i(busy && !r_hs && !w_hs),
    .count_o(cnt_stall), .saturated_o());
  /* verilator lint_on PINCONNECTEMPTY */

  // ---------------------------------------------------------------------------
  // Register read
  // ---------------------------------------------------------------------------
  logic [31:0] rdata_q, rdata_d;
  always_comb begin
    rdata_d = '0;
    if (reg_req_i && !reg_we_i) begin
      if (reg_is_queue) begin
        unique case ({7'b0, reg_addr_i[4:0]})
          RegQBaseLo:  rdata_d = q_base_q[reg_q][31:0];
          RegQBaseHi:  rdata_d = {16'b0, q_base_q[reg_q][47:32]};
          RegQSize:    rdata_d = {8'b0, q_size_q[reg_q]};
          RegQHead:    rdata_d = {8'b0, q_head_q[reg_q]};
          RegQTail:    rdata_d = {8'b0, q_tail_q[reg_q]};
          RegQCtrl:    rdata_d = {31'b0, q_en_q[reg_q]};
          RegQStatus:  rdata_d = {16'b0, q_code_q[reg_q], 5'b0, q_last_q[reg_q], q_err_q[reg_q],
                                  (state_q != StIdle && cur_q_q == reg_q) ||
                                  (p_valid_q && p_queue_q == reg_q)};
          RegQErrInfo: rdata_d = {8'b0, q_info_q[reg_q]};
          default: ;
        endcase
      end else begin
        unique case (reg_addr_i)
          RegId:           rdata_d = 32'h5444_4D41;
          RegParams:       rdata_d = {8'b0, 8'(MaxOutstanding), 8'(DataBytes), 8'(Queues)};
          RegCtrl:         rdata_d = {8'b0, wr_limit_q, rd_limit_q, 7'b0, eng_en_q};
          RegStatus:       rdata_d = {31'b0, busy};
          RegWinBaseLo:    rdata_d = win_base_q[31:0];
          RegWinBaseHi:    rdata_d = {16'b0, win_base_q[47:32]};
          RegWinLimitLo:   rdata_d = win_limit_q[31:0];
          RegWinLimitHi:   rdata_d = {16'b0, win_limit_q[47:32]};
          RegBytesRdLo:    rdata_d = bytes_rd_q[31:0];
          RegBytesRdHi:    rdata_d = bytes_rd_q[63:32];
          RegBytesWrLo:    rdata_d = bytes_wr_q[31:0];
          RegBytesWrHi:    rdata_d = bytes_wr_q[63:32];
          RegDescDoneLo:   rdata_d = cnt_done[31:0];
          RegDescDoneHi:   rdata_d = cnt_done[63:32];
          RegBusyCyclesLo: rdata_d = cnt_busy[31:0];
          RegBusyCyclesHi: rdata_d = cnt_busy[63:32];
          RegStallCyclesLo: rdata_d = cnt_stall[31:0];
          RegStallCyclesHi: rdata_d = cnt_stall[63:32];
          default: ;
        endcase
      end
    end
  end
  assign reg_rdata_o = rdata_q;

  // ---------------------------------------------------------------------------
  // Registers
  // ---------------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q      <= StIdle;
      eng_en_q     <= 1'b0;
      rd_limit_q   <= '0;
      wr_limit_q   <= '0;
      win_base_q   <= '0;
      win_limit_q  <= '0;
      q_base_q     <= '0;
      q_size_q     <= '0;
      q_head_q     <= '0;
      q_tail_q     <= '0;
      q_info_q     <= '0;
      q_next_q     <= '0;
      cur_idx_q    <= '0;
      aw_own_p_q   <= 1'b0;
      aw_cnt_q     <= '0;
      b_cnt_q      <= '0;
      p_valid_q    <= 1'b0;
      p_phase_q    <= PWait;
      p_queue_q    <= '0;
      p_index_q    <= '0;
      p_desc_addr_q <= '0;
      p_sem_addr_q <= '0;
      p_sem_value_q <= '0;
      p_completion_q <= 1'b0;
      p_last_q     <= 1'b0;
      p_seq_q      <= '0;
      p_werr_q     <= 1'b0;
      q_code_q     <= '0;
      q_en_q       <= '0;
      q_err_q      <= '0;
      q_last_q     <= '0;
      cur_q_q      <= '0;
      rr_q         <= QW'(Queues - 1);
      desc_addr_q  <= '0;
      desc_q       <= '0;
      fetch_err_q  <= 1'b0;
      fb_state_q   <= FbEmpty;
      fb_queue_q   <= '0;
      fb_idx_q     <= '0;
      fb_addr_q    <= '0;
      fb_desc_q    <= '0;
      fb_beat_q    <= '0;
      fb_err_q     <= 1'b0;
      fb_code_q    <= '0;
      fb_drop_q    <= 1'b0;
      ar_own_f_q   <= 1'b0;
      err_code_q   <= '0;
      rsv_q        <= '0;
      cmt_q        <= '0;
      awp_q        <= '0;
      cons_q       <= '0;
      rd_err_q     <= 1'b0;
      alloc_q      <= '0;
      retire_q     <= '0;
      slot_ptr_q   <= '0;
      slot_len_q   <= '0;
      slot_rem_q   <= '0;
      slot_lane_q  <= '0;
      slot_done_q  <= '0;
      slot_err_q   <= '0;
      wq_q         <= '0;
      wq_wr_q      <= '0;
      wq_rd_q      <= '0;
      w_started_q  <= 1'b0;
      w_rem_q      <= '0;
      w_beat_q     <= '0;
      tag_q_q      <= '0;
      tag_idx_q    <= '0;
      tag_wr_q     <= '0;
      tag_rd_q     <= '0;
      out_wr_q     <= '0;
      ar_hold_q    <= 1'b0;
      aw_hold_q    <= 1'b0;
      bytes_rd_q   <= '0;
      bytes_wr_q   <= '0;
      rdata_q      <= '0;
    end else begin
      state_q      <= state_d;
      eng_en_q     <= eng_en_d;
      rd_limit_q   <= rd_limit_d;
      wr_limit_q   <= wr_limit_d;
      win_base_q   <= win_base_d;
      win_limit_q  <= win_limit_d;
      q_base_q     <= q_base_d;
      q_size_q     <= q_size_d;
      q_head_q     <= q_head_d;
      q_tail_q     <= q_tail_d;
      q_info_q     <= q_info_d;
      q_next_q     <= q_next_d;
      cur_idx_q    <= cur_idx_d;
      aw_own_p_q   <= aw_own_p_d;
      aw_cnt_q     <= aw_cnt_d;
      b_cnt_q      <= b_cnt_d;
      p_valid_q    <= p_valid_d;
      p_phase_q    <= p_phase_d;
      p_queue_q    <= p_queue_d;
      p_index_q    <= p_index_d;
      p_desc_addr_q <= p_desc_addr_d;
      p_sem_addr_q <= p_sem_addr_d;
      p_sem_value_q <= p_sem_value_d;
      p_completion_q <= p_completion_d;
      p_last_q     <= p_last_d;
      p_seq_q      <= p_seq_d;
      p_werr_q     <= p_werr_d;
      q_code_q     <= q_code_d;
      q_en_q       <= q_en_d;
      q_err_q      <= q_err_d;
      q_last_q     <= q_last_d;
      cur_q_q      <= cur_q_d;
      rr_q         <= rr_d;
      desc_addr_q  <= desc_addr_d;
      desc_q       <= desc_d;
      fetch_err_q  <= fetch_err_d;
      fb_state_q   <= fb_state_d;
      fb_queue_q   <= fb_queue_d;
      fb_idx_q     <= fb_idx_d;
      fb_addr_q    <= fb_addr_d;
      fb_desc_q    <= fb_desc_d;
      fb_beat_q    <= fb_beat_d;
      fb_err_q     <= fb_err_d;
      fb_code_q    <= fb_code_d;
      fb_drop_q    <= fb_drop_d;
      ar_own_f_q   <= ar_own_f_d;
      err_code_q   <= err_code_d;
      rsv_q        <= rsv_d;
      cmt_q        <= cmt_d;
      awp_q        <= awp_d;
      cons_q       <= cons_d;
      rd_err_q     <= rd_err_d;
      alloc_q      <= alloc_d;
      retire_q     <= retire_d;
      slot_ptr_q   <= slot_ptr_d;
      slot_len_q   <= slot_len_d;
      slot_rem_q   <= slot_rem_d;
      slot_lane_q  <= slot_lane_d;
      slot_done_q  <= slot_done_d;
      slot_err_q   <= slot_err_d;
      wq_q         <= wq_d;
      wq_wr_q      <= wq_wr_d;
      wq_rd_q      <= wq_rd_d;
      w_started_q  <= w_started_d;
      w_rem_q      <= w_rem_d;
      w_beat_q     <= w_beat_d;
      tag_q_q      <= tag_q_d;
      tag_idx_q    <= tag_idx_d;
      tag_wr_q     <= tag_wr_d;
      tag_rd_q     <= tag_rd_d;
      out_wr_q     <= out_wr_d;
      ar_hold_q    <= ar_hold_d;
      aw_hold_q    <= aw_hold_d;
      bytes_rd_q   <= bytes_rd_d;
      bytes_wr_q   <= bytes_wr_d;
      rdata_q      <= rdata_d;
    end
  end

  // ---------------------------------------------------------------------------
  // Assertions: AXI4 manager rules and internal invariants
  // ---------------------------------------------------------------------------
  localparam int unsigned AxW = 64 + 8 + IdWidth;
  logic [AxW-1:0] ar_payload_q, aw_payload_q;   // address, length, id of a pending request
  logic [AxW-1:0] ar_payload, aw_payload;
  logic [DataWidth + DataBytes:0] w_payload_q, w_payload;
  logic        w_hold_q, w_hold_d;
  assign ar_payload = {araddr_o, arlen_o, arid_o};
  assign aw_payload = {awaddr_o, awlen_o, awid_o};
  assign w_payload  = {wlast_o, wstrb_o, wdata_o};
  assign w_hold_d   = wvalid_o && !wready_i;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ar_payload_q <= '0;
      aw_payload_q <= '0;
      w_payload_q  <= '0;
      w_hold_q     <= 1'b0;
    end else begin
      ar_payload_q <= ar_payload;
      aw_payload_q <= aw_payload;
      w_payload_q  <= w_payload;
      w_hold_q     <= w_hold_d;
    end
  end

  // The engine uses one write ID, reads only the error bit of a response (OKAY and
  // EXOKAY alike), and leaves the status field of a fetched descriptor alone.
  logic unused;
  assign unused = ^{bresp_i[0], rresp_i[0], desc.status, total_bytes[31:0]};
  `ASSERT(BidIsWriteId_A, !bvalid_i || bid_i == WriteId, clk_i, rst_ni)

  `ASSERT_INIT(DataBytesPow2_A, DataBytes >= 4 && DataBytes <= 64 &&
                                (DataBytes & (DataBytes - 1)) == 0)
  `ASSERT_INIT(OutstandingPow2_A, MaxOutstanding >= 1 && MaxOutstanding <= 64 &&
                                  (MaxOutstanding & (MaxOutstanding - 1)) == 0)
  `ASSERT_INIT(BufHoldsTwoBursts_A, BufBytes >= 2 * MaxBurstBytes &&
                                    (BufBytes & (BufBytes - 1)) == 0)
  `ASSERT_INIT(QueuesFit_A, Queues >= 1 && Queues <= 64)

  `ASSERT(ArStable_A, !ar_hold_q || (arvalid_o && ar_payload == ar_payload_q), clk_i, rst_ni)
  `ASSERT(AwStable_A, !aw_hold_q || (awvalid_o && aw_payload == aw_payload_q), clk_i, rst_ni)
  `ASSERT(WStable_A, !w_hold_q || (wvalid_o && w_payload == w_payload_q), clk_i, rst_ni)
  `ASSERT(ArNo4KCross_A, !arvalid_o ||
          {1'b0, araddr_o[11:0]} + (13'(arlen_o) + 13'd1) * 13'(DataBytes) <= 13'd4096,
          clk_i, rst_ni)
  `ASSERT(AwNo4KCross_A, !awvalid_o ||
          {1'b0, awaddr_o[11:0]} + (13'(awlen_o) + 13'd1) * 13'(DataBytes) <= 13'd4096,
          clk_i, rst_ni)
  `ASSERT(WlastOnLastBeat_A, !wvalid_o ||
          wlast_o == (w_beat_q == {1'b0, beats_of(w_head.lane, w_head.bytes)}), clk_i, rst_ni)
  `ASSERT(WStrbNonZero_A, !wvalid_o || wstrb_o != '0, clk_i, rst_ni)
  `ASSERT(RidKnown_A, !rvalid_i || rid_i == FetchId || rid_i < IdWidth'(MaxOutstanding),
          clk_i, rst_ni)
  `ASSERT(RFetchOnlyWhenFetching_A, !r_fetch || fb_state_q == FbR, clk_i, rst_ni)
  `ASSERT(RDataForLiveSlot_A, !r_data || (!slot_done_q[r_slot] && slot_rem_q[r_slot] != '0),
          clk_i, rst_ni)
  `ASSERT(RlastMatchesLength_A, !r_data || rlast_i == (slot_rem_q[r_slot] == r_bytes),
          clk_i, rst_ni)
  `ASSERT(BNotUnexpected_A, !bvalid_i || out_wr_q != '0, clk_i, rst_ni)
  `ASSERT(CommitBeforeWrite_A, cons_q <= cmt_q && awp_q <= cmt_q && cmt_q <= rsv_q,
          clk_i, rst_ni)
  `ASSERT(BufferNeverOverfull_A, rsv_q - cons_q <= 32'(BufBytes), clk_i, rst_ni)
  `ASSERT_KNOWN(AwValidKnown_A, awvalid_o, clk_i, rst_ni)
  `ASSERT_KNOWN(WValidKnown_A, wvalid_o, clk_i, rst_ni)
  `ASSERT_KNOWN(ArValidKnown_A, arvalid_o, clk_i, rst_ni)
endmodule
