// DMA engine: Queues descriptor rings served round-robin, one AXI4 manager port.
//
// Units: tsr_dma_regs (registers, counters), tsr_dma_fetch (round-robin pick,
// descriptor fetch), tsr_dma_check (decode rules), tsr_dma_completion
// (completion stage); this module holds the control, the read slots, the
// byte buffer, the write queue and the AXI channels.
//
// Two descriptors of one queue may move data at once: once the running
// descriptor has issued its last read, the next one (fetched, checked, of the
// same queue, without BARRIER) starts its reads while the running one's
// writes drain (the read-ahead descriptor); it takes over the write side when
// the running one is handed to the completion stage. Stream positions run on
// across the two, so the byte buffer's credit covers both. Source bursts are read (IDs 0 ..
// MaxOutstanding-1, out of order across IDs) into a byte buffer at positions
// reserved in stream order; destination bursts are issued once their bytes are
// in the buffer, so a write burst never waits on a read and a failed read never
// reaches memory. Writes are posted on one AXI ID (responses in order): when a
// descriptor has sent its last write beat it moves to the completion stage,
// which waits for its write responses, then writes the COMPLETION semaphore and
// the status word and advances HEAD, while the next descriptor already runs. A
// fetch unit reads the next descriptor while the current one moves data.
// A BARRIER descriptor waits for the completion stage and every write response
// before it reads. A burst that starts a contiguous run (one descriptor of the
// hardware's one-run descriptor format) issues at least CTRL.run_gap cycles
// after the previous run start of its side: the engine's per-run cost, which
// makes small rows overhead-bound. A descriptor's first write burst issues at
// least TIMING.desc_gap cycles after the previous descriptor's last data beat
// on W: the per-descriptor cost that read-ahead cannot hide, which makes
// mid-sized descriptors fall short of the peak. See docs/dma.md.
module tsr_dma_engine
  import tsr_dma_pkg::*;
  import tsr_dma_unit_pkg::*;
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

  output logic                 busy_o,
  output logic                 moving_o   // a descriptor is moving data: its first R beat .. its last W beat
);  `include "tsr_assert.svh"

  localparam int unsigned LaneW         = $clog2(DataBytes);
  localparam int unsigned SlotW         = $clog2(MaxOutstanding);
  localparam int unsigned QW            = (Queues > 1) ? $clog2(Queues) : 1;
  localparam int unsigned MaxBurstBytes = max_burst_bytes(DataBytes);
  localparam int unsigned BurstW        = $clog2(MaxBurstBytes) + 1;
  localparam int unsigned Rows          = BufBytes / DataBytes;
  localparam int unsigned RowW          = $clog2(Rows);
  localparam int unsigned FetchBeats    = DescBytes / DataBytes;
  localparam int unsigned WqW           = SlotW + 1;
  localparam logic [IdWidth-1:0] FetchId = IdWidth'(MaxOutstanding);
  localparam logic [IdWidth-1:0] WriteId = '0;

  // ---------------------------------------------------------------------------
  // State
  // ---------------------------------------------------------------------------
  typedef enum logic [3:0] {
    StIdle, StDecode, StBarrier, StRun, StDrain, StHandoff, StFinish
  } state_e;

  // The descriptor being run
  typedef struct packed {
    state_e                 state;
    logic [QW-1:0]          qid;      // queue being served
    logic [23:0]            index;      // its ring index
    logic [47:0]            desc_addr;  // its ring slot
    logic [DescBytes*8-1:0] desc;
    logic                   fetch_err;
    logic [7:0]             err_code;   // its result
    logic                   gen;        // read generation of its bursts
    logic                   moving;     // it has received a data beat and not sent its last
  } ctl_t;

  // The read-ahead descriptor: of the running one's queue, its reads issuing
  // while the running one's writes drain; it becomes the running one at hand-off.
  typedef struct packed {
    logic                   valid;
    logic [QW-1:0]          qid;
    logic [23:0]            index;
    logic [47:0]            desc_addr;
    logic [DescBytes*8-1:0] desc;
    logic                   gen;
    logic                   moving;     // it has received a data beat
  } ra_t;

  // Stream positions (bytes since the last decoded descriptor started; they
  // run on across a read-ahead descriptor) and read slots, allocated in issue
  // order (slot index = ARID)
  typedef struct packed {
    logic [31:0]    rsv;     // reserved by issued reads
    logic [31:0]    cmt;     // read back, in order, without error
    logic [31:0]    awp;     // claimed by issued write bursts
    logic [31:0]    cons;    // sent on W
    logic           rd_err;
    logic           err_gen;  // the generation of the read that failed
    logic           rgen;     // the generation of the descriptor issuing reads
    logic [SlotW:0] alloc;
    logic [SlotW:0] retire;
  } stream_t;

  typedef struct packed {
    logic [31:0]       ptr;   // stream position of the next byte
    logic [BurstW-1:0] len;
    logic [BurstW-1:0] rem;   // bytes still to come
    logic [LaneW-1:0]  lane;  // lane of the next byte
    logic              done;
    logic              err;
    logic              gen;   // the generation of the descriptor that issued it
  } slot_t;

  // The W channel: the burst at the write queue's head, and writes from AW to B
  typedef struct packed {
    logic              started;  // its first beat is sent
    logic [BurstW-1:0] rem;
    logic [8:0]        beat;
    logic [8:0]        outstanding;
  } wside_t;

  // Run gaps: cycles until the next burst that starts a run may issue, per
  // side; the descriptor gap: cycles until a descriptor's first write burst may issue
  typedef struct packed {
    logic [7:0]  ar;
    logic [7:0]  aw;
    logic [15:0] desc;
  } gap_t;

  // AXI hold: once valid, a channel keeps valid and payload until ready
  typedef struct packed {
    logic ar;
    logic aw;
    logic ar_fetch;       // the held AR is a descriptor fetch
    logic aw_completion;  // the held AW belongs to the completion unit
  } hold_t;

  // Write bursts issued on AW whose W beats are not all sent
  typedef struct packed {
    logic              imm;    // immediate value (semaphore, status), not buffer data
    logic [LaneW-1:0]  lane;   // lane of the first byte
    logic [BurstW-1:0] bytes;
    logic [31:0]       value;
  } wq_entry_t;

  // The owner of an outstanding write, for error attribution (responses in order)
  typedef struct packed {
    logic [QW-1:0] qid;
    logic [23:0]   index;
  } owner_t;

  ctl_t                           ctl_q, ctl_d;
  ra_t                            ra_q, ra_d;
  stream_t                        st_q, st_d;
  slot_t [MaxOutstanding-1:0]     slot_q, slot_d;
  wside_t                         w_q, w_d;
  hold_t                          hold_q, hold_d;
  gap_t                           gap_q, gap_d;
  desc_t                          desc, fb_d_desc, ra_desc;
  assign desc    = desc_t'(ctl_q.desc);
  assign ra_desc = desc_t'(ra_q.desc);
  // Of the read-ahead descriptor only its destination pattern is read here
  // (its source walk started from the fetch port; the whole of it moves to
  // ctl_q at hand-off).
  logic unused_ra_desc;
  assign unused_ra_desc = ^{ra_desc.src_addr, ra_desc.sem_addr, ra_desc.sem_value,
                            ra_desc.src_size, ra_desc.src_stride, ra_desc.flags, ra_desc.magic,
                            ra_desc.status};

  // ---------------------------------------------------------------------------
  // Register unit
  // ---------------------------------------------------------------------------
  logic                eng_en, rewind;
  logic [7:0]          rd_lim, wr_lim, run_gap;
  logic [15:0]         desc_gap;
  logic [47:0]         win_base, win_limit;
  queue_t [Queues-1:0] queues;
  logic [QW-1:0]       rewind_queue;
  logic [Queues-1:0]   q_active;
  logic                busy, fetch_advance, fail;
  logic [QW-1:0]       fetch_queue;
  logic                ar_hs, aw_hs, w_hs, b_hs, r_hs, r_data, r_fetch;
  logic [BurstW-1:0]   r_bytes, w_bytes;
  owner_t              b_owner;  // the owner of the write whose response is on B
  wq_entry_t           w_head;   // the write burst W is sending
  logic                cmp_valid, cmp_done, cmp_done_last;
  logic [QW-1:0]       cmp_queue, cmp_done_queue;
  logic [23:0]         cmp_done_index;

  tsr_dma_regs #(
    .Queues(Queues), .DataBytes(DataBytes), .MaxOutstanding(MaxOutstanding)
  ) u_regs (
    .clk_i, .rst_ni,
    .reg_req_i, .reg_we_i, .reg_addr_i, .reg_wdata_i, .reg_rdata_o,
    .eng_en_o(eng_en), .rd_limit_o(rd_lim), .wr_limit_o(wr_lim), .run_gap_o(run_gap),
    .desc_gap_o(desc_gap),
    .win_base_o(win_base), .win_limit_o(win_limit), .queues_o(queues),
    .rewind_o(rewind), .rewind_queue_o(rewind_queue),
    .wr_err_i(b_hs && bresp_i[1]), .wr_err_queue_i(b_owner.qid),
    .wr_err_index_i(b_owner.index),
    .done_i(cmp_done), .done_queue_i(cmp_done_queue), .done_index_i(cmp_done_index),
    .done_last_i(cmp_done_last),
    .fetch_i(fetch_advance), .fetch_queue_i(fetch_queue),
    .fail_i(fail), .fail_queue_i(ctl_q.qid), .fail_index_i(ctl_q.index),
    .fail_code_i(ctl_q.err_code),
    .busy_i(busy), .q_active_i(q_active),
    .rd_bytes_valid_i(r_data && !rresp_i[1]), .rd_bytes_i(32'(r_bytes)),
    .wr_bytes_valid_i(w_hs && !w_head.imm), .wr_bytes_i(32'(w_bytes)),
    .stall_i(busy && !r_hs && !w_hs));

  // ---------------------------------------------------------------------------
  // Fetch unit
  // ---------------------------------------------------------------------------
  logic                   fb_ar_req, fb_r_expected, fb_valid, fb_take, fb_err, fb_drop, fb_busy;
  logic [47:0]            fb_ar_addr, fb_addr;
  logic [QW-1:0]          fb_queue;
  logic [23:0]            fb_index;
  logic [DescBytes*8-1:0] fb_desc;
  logic [7:0]             fb_code;
  logic                   ar_fetch;  // the AR channel carries the fetch this cycle

  tsr_dma_fetch #(.Queues(Queues), .DataBytes(DataBytes)) u_fetch (
    .clk_i, .rst_ni,
    .eng_en_i(eng_en), .queues_i(queues), .win_base_i(win_base), .win_limit_i(win_limit),
    .rewind_i(rewind), .rewind_queue_i(rewind_queue),
    .advance_o(fetch_advance), .advance_queue_o(fetch_queue),
    .ar_req_o(fb_ar_req), .ar_addr_o(fb_ar_addr), .ar_done_i(ar_hs && ar_fetch),
    .r_expected_o(fb_r_expected), .r_valid_i(r_fetch), .r_data_i(rdata_i), .r_err_i(rresp_i[1]),
    .desc_valid_o(fb_valid), .desc_ready_i(fb_take), .queue_o(fb_queue), .index_o(fb_index),
    .addr_o(fb_addr), .desc_o(fb_desc), .err_o(fb_err), .code_o(fb_code), .drop_o(fb_drop),
    .busy_o(fb_busy));

  // ---------------------------------------------------------------------------
  // Descriptor check (combinational on the descriptor being decoded)
  // ---------------------------------------------------------------------------
  logic [7:0] check_code, fb_check_code;
  tsr_dma_check u_check (
    .desc_i(desc), .fetch_err_i(ctl_q.fetch_err), .win_base_i(win_base),
    .win_limit_i(win_limit), .code_o(check_code));
  // The same rules on the fetched descriptor: only one that passes them may read ahead.
  assign fb_d_desc = desc_t'(fb_desc);
  tsr_dma_check u_check_ahead (
    .desc_i(fb_d_desc), .fetch_err_i(fb_err), .win_base_i(win_base),
    .win_limit_i(win_limit), .code_o(fb_check_code));

  // ---------------------------------------------------------------------------
  // Walkers
  // ---------------------------------------------------------------------------
  logic walk_start;   // Decode: both walkers start on the decoded descriptor
  logic ahead_start;  // the read-ahead descriptor's source walk starts
  logic chain_start;  // hand-off to the read-ahead descriptor: its destination walk starts
  // Each walker samples its side's pattern when it starts.
  logic [47:0]      src_base, dst_base;
  logic [3:0][15:0] src_size, dst_size;
  logic [3:0][23:0] src_stride, dst_stride;
  logic [3:0]       src_elog2, dst_elog2;
  always_comb begin
    src_base   = ahead_start ? fb_d_desc.src_addr   : desc.src_addr;
    src_size   = ahead_start ? fb_d_desc.src_size   : desc.src_size;
    src_stride = ahead_start ? fb_d_desc.src_stride : desc.src_stride;
    src_elog2  = ahead_start ? fb_d_desc.elem_log2  : desc.elem_log2;
    dst_base   = chain_start ? ra_desc.dst_addr     : desc.dst_addr;
    dst_size   = chain_start ? ra_desc.dst_size     : desc.dst_size;
    dst_stride = chain_start ? ra_desc.dst_stride   : desc.dst_stride;
    dst_elog2  = chain_start ? ra_desc.elem_log2    : desc.elem_log2;
  end
  logic src_valid, src_ready, src_done, dst_valid, dst_ready, dst_done, src_first, dst_first;
  logic [47:0] src_addr, dst_addr;
  logic [BurstW-1:0] src_bytes, dst_bytes;

  tsr_dma_walker #(.MaxBurstBytes(MaxBurstBytes)) u_src (
    .clk_i, .rst_ni,
    .start_i(walk_start || ahead_start), .base_i(src_base), .size_i(src_size),
    .stride_i(src_stride), .elem_log2_i(src_elog2),
    .burst_valid_o(src_valid), .burst_ready_i(src_ready), .burst_addr_o(src_addr),
    .burst_bytes_o(src_bytes), .burst_first_o(src_first), .done_o(src_done));

  tsr_dma_walker #(.MaxBurstBytes(MaxBurstBytes)) u_dst (
    .clk_i, .rst_ni,
    .start_i(walk_start || chain_start), .base_i(dst_base), .size_i(dst_size),
    .stride_i(dst_stride), .elem_log2_i(dst_elog2),
    .burst_valid_o(dst_valid), .burst_ready_i(dst_ready), .burst_addr_o(dst_addr),
    .burst_bytes_o(dst_bytes), .burst_first_o(dst_first), .done_o(dst_done));

  // ---------------------------------------------------------------------------
  // Channel handshakes and stream arithmetic
  // ---------------------------------------------------------------------------
  assign ar_hs = arvalid_o && arready_i;
  assign aw_hs = awvalid_o && awready_i;
  assign w_hs  = wvalid_o && wready_i;
  assign b_hs  = bvalid_i && bready_o;
  assign r_hs  = rvalid_i && rready_o;
  assign r_fetch = r_hs && rid_i == FetchId;
  assign r_data  = r_hs && rid_i != FetchId;

  logic [SlotW-1:0] alloc_idx, retire_idx, r_slot;
  assign alloc_idx  = st_q.alloc[SlotW-1:0];
  assign retire_idx = st_q.retire[SlotW-1:0];
  assign r_slot     = rid_i[SlotW-1:0];

  logic [SlotW:0] rd_outstanding;
  assign rd_outstanding = st_q.alloc - st_q.retire;

  logic run_phase;   // data bursts may be issued
  logic rd_phase;    // read bursts may be issued (also while the running one waits to hand off)
  logic aborting;    // the current descriptor has failed: issue nothing new
  logic r_ctl;       // the data beat on R belongs to the running descriptor (else to the read-ahead one)
  assign run_phase = ctl_q.state == StRun || ctl_q.state == StDrain;
  assign rd_phase  = run_phase || ctl_q.state == StHandoff;
  assign aborting  = (st_q.rd_err && st_q.err_gen == ctl_q.gen) || queues[ctl_q.qid].err ||
                     ctl_q.state == StDrain;
  assign r_ctl     = slot_q[r_slot].gen == ctl_q.gen;

  // Read data beat: bytes it carries and where they go in the stream
  logic [LaneW-1:0]  r_lane;
  logic [31:0]       r_ptr;
  logic [BurstW-1:0] r_rem;
  always_comb begin
    r_lane  = slot_q[r_slot].lane;
    r_ptr   = slot_q[r_slot].ptr;
    r_rem   = slot_q[r_slot].rem;
    r_bytes = ((BurstW)'(DataBytes) - BurstW'(r_lane) < r_rem) ?
              (BurstW)'(DataBytes) - BurstW'(r_lane) : r_rem;
  end

  // ---------------------------------------------------------------------------
  // Write queue and owner FIFO: one entry per write from AW until its last W
  // beat, and until its B response
  // ---------------------------------------------------------------------------
  logic      wq_wready, wq_rvalid, w_last, tag_wready;
  wq_entry_t wq_push;
  owner_t    tag_push;
  logic [WqW-1:0] tag_depth;

  tsr_fifo_sync #(.Width($bits(wq_entry_t)), .Depth(MaxOutstanding)) u_wq (
    .clk_i, .rst_ni,
    .wvalid_i(aw_hs), .wready_o(wq_wready), .wdata_i(wq_push),
    .rvalid_o(wq_rvalid), .rready_i(w_hs && w_last), .rdata_o(w_head), .depth_o());

  tsr_fifo_sync #(.Width($bits(owner_t)), .Depth(MaxOutstanding)) u_tag (
    .clk_i, .rst_ni,
    .wvalid_i(aw_hs), .wready_o(tag_wready), .wdata_i(tag_push),
    .rvalid_o(), .rready_i(b_hs), .rdata_o(b_owner), .depth_o(tag_depth));

  // Write data beat
  logic [LaneW-1:0]  w_lane;
  logic [BurstW-1:0] w_rem;
  always_comb begin
    w_lane  = w_q.started ? '0 : w_head.lane;
    w_rem   = w_q.started ? w_q.rem : w_head.bytes;
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
      rd_off = LaneW'(b) - st_q.cons[LaneW-1:0];
      rd_pos = st_q.cons + 32'(rd_off);
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
          wdata_o[8 * l +: 8] = bank_rdata[LaneW'(st_q.cons[LaneW-1:0] - w_lane + LaneW'(l))];
        end
      end
    end
  end
  assign wvalid_o = wq_rvalid;
  assign wlast_o  = w_last;

  // ---------------------------------------------------------------------------
  // Completion unit
  // ---------------------------------------------------------------------------
  logic              cmp_aw_req, cmp_handoff, cmp_ready;
  logic [63:0]       cmp_aw_addr;
  logic [LaneW-1:0]  cmp_w_lane;
  logic [BurstW-1:0] cmp_w_bytes;
  logic [31:0]       cmp_w_value;
  logic              aw_completion;  // the AW channel carries a completion write this cycle

  tsr_dma_completion #(.Queues(Queues), .DataBytes(DataBytes)) u_completion (
    .clk_i, .rst_ni,
    .handoff_valid_i(cmp_handoff), .handoff_ready_o(cmp_ready),
    .handoff_queue_i(ctl_q.qid), .handoff_index_i(ctl_q.index),
    .handoff_desc_addr_i(ctl_q.desc_addr), .handoff_sem_addr_i(desc.sem_addr),
    .handoff_sem_value_i(desc.sem_value),
    .handoff_completion_i(desc.flags[FlagCompletionBit]),
    .handoff_last_i(desc.flags[FlagLastBit]),
    .aw_hs_i(aw_hs), .aw_mine_i(aw_hs && aw_completion), .b_hs_i(b_hs),
    .b_err_i(b_hs && bresp_i[1]), .b_queue_i(b_owner.qid), .b_index_i(b_owner.index),
    .aw_req_o(cmp_aw_req), .aw_addr_o(cmp_aw_addr), .w_lane_o(cmp_w_lane),
    .w_bytes_o(cmp_w_bytes), .w_value_o(cmp_w_value),
    .valid_o(cmp_valid), .queue_o(cmp_queue),
    .done_o(cmp_done), .done_queue_o(cmp_done_queue), .done_index_o(cmp_done_index),
    .done_last_o(cmp_done_last));

  // ---------------------------------------------------------------------------
  // AR and AW channels
  // ---------------------------------------------------------------------------
  logic data_ar_ok, data_aw_ok, cmp_aw_ok;
  always_comb begin
    data_ar_ok = rd_phase && src_valid && !aborting && !st_q.rd_err &&
                 8'(rd_outstanding) < rd_lim &&
                 (st_q.rsv - st_q.cons) + 32'(src_bytes) <= 32'(BufBytes) &&
                 (!src_first || gap_q.ar == '0);
    data_aw_ok = run_phase && dst_valid && !aborting && wq_wready &&
                 w_q.outstanding < 9'(wr_lim) && (st_q.cmt - st_q.awp) >= 32'(dst_bytes) &&
                 (!dst_first || gap_q.aw == '0) && gap_q.desc == '0;

    // A descriptor fetch goes first between data bursts; a held request keeps its owner.
    ar_fetch  = hold_q.ar ? hold_q.ar_fetch : fb_ar_req;
    arvalid_o = hold_q.ar || fb_ar_req || data_ar_ok;
    arid_o    = IdWidth'(alloc_idx);
    araddr_o  = {16'b0, src_addr[47:LaneW], {LaneW{1'b0}}};
    arlen_o   = beats_of(src_addr[LaneW-1:0], src_bytes);
    if (ar_fetch) begin
      arid_o   = FetchId;
      araddr_o = {16'b0, fb_ar_addr};
      arlen_o  = 8'(FetchBeats - 1);
    end

    // The completion unit goes first between bursts; a held request keeps its owner.
    cmp_aw_ok     = cmp_aw_req && wq_wready && w_q.outstanding < 9'(wr_lim);
    aw_completion = hold_q.aw ? hold_q.aw_completion : cmp_aw_ok;
    awvalid_o = hold_q.aw || cmp_aw_ok || data_aw_ok;
    awaddr_o  = {16'b0, dst_addr[47:LaneW], {LaneW{1'b0}}};
    awlen_o   = beats_of(dst_addr[LaneW-1:0], dst_bytes);
    if (aw_completion) begin
      awlen_o  = '0;
      awaddr_o = cmp_aw_addr;
    end

    // What the write queue and the owner FIFO take on an AW handshake
    wq_push = wq_entry_t'{imm: aw_completion,
                lane: aw_completion ? cmp_w_lane : dst_addr[LaneW-1:0],
                bytes: aw_completion ? cmp_w_bytes : dst_bytes,
                value: cmp_w_value};
    tag_push = aw_completion ? owner_t'{qid: cmp_queue, index: cmp_done_index} :
                               owner_t'{qid: ctl_q.qid, index: ctl_q.index};
  end
  assign arsize_o  = 3'(LaneW);
  assign arburst_o = 2'b01;  // INCR
  assign awid_o    = WriteId;
  assign awsize_o  = 3'(LaneW);
  assign awburst_o = 2'b01;
  assign rready_o  = 1'b1;   // every read has buffer space reserved at issue
  assign bready_o  = 1'b1;

  assign src_ready = ar_hs && !ar_fetch;
  assign dst_ready = aw_hs && !aw_completion;

  // ---------------------------------------------------------------------------
  // Next state
  // ---------------------------------------------------------------------------
  always_comb begin
    ctl_d  = ctl_q;
    st_d   = st_q;
    slot_d = slot_q;
    w_d    = w_q;
    hold_d = hold_t'{ar: arvalid_o && !arready_i, aw: awvalid_o && !awready_i,
               ar_fetch: ar_fetch, aw_completion: aw_completion};
    // A run start loads its side's gap; the gap counts down every cycle.
    gap_d.ar = (gap_q.ar != '0) ? gap_q.ar - 8'd1 : '0;
    gap_d.aw = (gap_q.aw != '0) ? gap_q.aw - 8'd1 : '0;
    gap_d.desc = (gap_q.desc != '0) ? gap_q.desc - 16'd1 : '0;
    if (ar_hs && !ar_fetch && src_first && run_gap > 8'd1) gap_d.ar = run_gap - 8'd1;
    if (aw_hs && !aw_completion && dst_first && run_gap > 8'd1) gap_d.aw = run_gap - 8'd1;
    ra_d   = ra_q;
    // A descriptor moves from its first data beat on R to its last data beat
    // on W (every issued destination burst sent), or until it fails.
    if (r_data && rd_phase) begin
      if (r_ctl) ctl_d.moving = 1'b1;
      else       ra_d.moving  = 1'b1;
    end
    if (w_hs && !w_head.imm && dst_done && st_q.cons + 32'(w_bytes) == st_q.awp) begin
      ctl_d.moving = 1'b0;
      // The descriptor's last data beat: every data AW after it is of a later
      // descriptor, so holding them all holds the next one's first.
      if (desc_gap > 16'd1) gap_d.desc = desc_gap - 16'd1;
    end
    walk_start  = 1'b0;
    ahead_start = 1'b0;
    chain_start = 1'b0;
    fb_take     = 1'b0;
    cmp_handoff = 1'b0;
    fail        = 1'b0;

    // Read channel: data beats
    if (r_data) begin
      slot_d[r_slot].ptr  = r_ptr + 32'(r_bytes);
      slot_d[r_slot].rem  = r_rem - r_bytes;
      slot_d[r_slot].lane = '0;
      slot_d[r_slot].err  = slot_q[r_slot].err || rresp_i[1];
      if (rlast_i) begin
        slot_d[r_slot].done = 1'b1;
      end
    end
    // Retire the oldest read in order; only error-free data before any error commits
    if (rd_outstanding != '0 && slot_q[retire_idx].done) begin
      st_d.retire = st_q.retire + 1'b1;
      slot_d[retire_idx].done = 1'b0;
      if (slot_q[retire_idx].err && !st_q.rd_err) begin
        st_d.err_gen = slot_q[retire_idx].gen;
      end
      if (slot_q[retire_idx].err || st_q.rd_err) begin
        st_d.rd_err = 1'b1;
      end else begin
        st_d.cmt = st_q.cmt + 32'(slot_q[retire_idx].len);
      end
      slot_d[retire_idx].err = 1'b0;
    end
    if (ar_hs && !ar_fetch) begin
      slot_d[alloc_idx] = slot_t'{ptr: st_q.rsv, len: src_bytes, rem: src_bytes,
                            lane: src_addr[LaneW-1:0], done: 1'b0, err: 1'b0, gen: st_q.rgen};
      st_d.alloc = st_q.alloc + 1'b1;
      st_d.rsv   = st_q.rsv + 32'(src_bytes);
    end

    // Write address: the write queue and the owner FIFO take it (above)
    if (aw_hs && !aw_completion) begin
      st_d.awp = st_q.awp + 32'(dst_bytes);
    end
    // Write data
    if (w_hs) begin
      if (!w_head.imm) begin
        st_d.cons = st_q.cons + 32'(w_bytes);
      end
      w_d.started = !w_last;
      w_d.rem     = w_rem - w_bytes;
      w_d.beat    = w_last ? '0 : w_q.beat + 1'b1;
    end
    w_d.outstanding = w_q.outstanding + 9'(aw_hs) - 9'(b_hs);

    // Control
    unique case (ctl_q.state)
      StIdle: begin
        if (fb_valid) begin
          fb_take = 1'b1;
          // A descriptor of a stopped or rewound queue is dropped unrun.
          if (!fb_drop && !queues[fb_queue].err) begin
            ctl_d = ctl_t'{state: (fb_code != ErrNone) ? StFinish : StDecode, qid: fb_queue,
                      index: fb_index, desc_addr: fb_addr, desc: fb_desc, fetch_err: fb_err,
                      err_code: fb_code, gen: st_q.rgen, moving: 1'b0};
          end
        end
      end
      StDecode: begin
        st_d.rsv    = '0;
        st_d.cmt    = '0;
        st_d.awp    = '0;
        st_d.cons   = '0;
        st_d.rd_err = 1'b0;
        if (check_code != ErrNone) begin
          ctl_d.err_code = check_code;
          ctl_d.state    = StFinish;
        end else begin
          walk_start  = 1'b1;
          ctl_d.state = desc.flags[FlagBarrierBit] ? StBarrier : StRun;
        end
      end
      StBarrier: if (w_q.outstanding == '0 && !cmp_valid) ctl_d.state = StRun;
      StRun: begin
        if (aborting) begin
          ctl_d.state = StDrain;
        end else if (dst_done && !wq_rvalid &&
                     (ra_q.valid || (src_done && rd_outstanding == '0))) begin
          ctl_d.state = StHandoff;
        end
      end
      StDrain: begin
        // Let issued reads return and issued write bursts send their beats.
        if (!hold_q.ar && !hold_q.aw && rd_outstanding == '0 && !wq_rvalid) begin
          ctl_d.err_code = queues[ctl_q.qid].err ? queues[ctl_q.qid].code : ErrReadResp;
          ctl_d.state    = StFinish;
        end
      end
      StHandoff: begin
        // Data sent; hand the descriptor to the completion unit once it is free.
        if (queues[ctl_q.qid].err) begin
          ctl_d.err_code = queues[ctl_q.qid].code;
          // A read-ahead descriptor's reads must return before the stream resets.
          ctl_d.state    = ra_q.valid ? StDrain : StFinish;
        end else if (cmp_ready) begin
          cmp_handoff = 1'b1;
          if (ra_q.valid) begin
            // The read-ahead descriptor takes over the write side; its reads go on.
            chain_start = 1'b1;
            ctl_d = ctl_t'{state: StRun, qid: ra_q.qid, index: ra_q.index,
                      desc_addr: ra_q.desc_addr, desc: ra_q.desc, fetch_err: 1'b0,
                      err_code: ErrNone, gen: ra_q.gen,
                      moving: ra_q.moving || (r_data && !r_ctl)};
            ra_d.valid  = 1'b0;
            ra_d.moving = 1'b0;
          end else begin
            ctl_d.state = StIdle;
          end
        end
      end
      StFinish: begin
        // A failed descriptor: stop its queue unless an earlier error already did.
        // A read-ahead descriptor (of the same queue) is dropped unrun.
        fail         = 1'b1;
        ctl_d.state  = StIdle;
        ctl_d.moving = 1'b0;
        ra_d.valid   = 1'b0;
        ra_d.moving  = 1'b0;
      end
      default: ctl_d.state = StIdle;
    endcase

    // Read ahead: once the running descriptor has issued its last read, the
    // next fetched descriptor of its queue starts reading, if it passes the
    // decode rules and has no BARRIER (a descriptor that fails or waits takes
    // the Idle path after the hand-off, as before). Not in the cycle of the
    // hand-off itself.
    if ((ctl_q.state == StRun || (ctl_q.state == StHandoff && !cmp_ready)) &&
        src_done && !ra_q.valid && !aborting && !st_q.rd_err && !queues[ctl_q.qid].err &&
        fb_valid && !fb_drop && fb_code == ErrNone && fb_queue == ctl_q.qid &&
        !fb_d_desc.flags[FlagBarrierBit] && fb_check_code == ErrNone) begin
      fb_take     = 1'b1;
      ahead_start = 1'b1;
      st_d.rgen   = !st_q.rgen;
      ra_d = ra_t'{valid: 1'b1, qid: fb_queue, index: fb_index, desc_addr: fb_addr,
                   desc: fb_desc, gen: !st_q.rgen, moving: 1'b0};
    end
  end

  // ---------------------------------------------------------------------------
  // Status
  // ---------------------------------------------------------------------------
  assign busy = ctl_q.state != StIdle || ra_q.valid || cmp_valid || fb_busy || w_q.outstanding != '0 ||
                wq_rvalid || rd_outstanding != '0 || gap_q != '0;
  assign busy_o = busy;
  assign moving_o = ctl_q.moving || ra_q.moving || (r_data && rd_phase);
  always_comb begin
    for (int q = 0; q < Queues; q++) begin
      q_active[q] = (ctl_q.state != StIdle && ctl_q.qid == QW'(q)) ||
                    (ra_q.valid && ra_q.qid == QW'(q)) ||
                    (cmp_valid && cmp_queue == QW'(q));
    end
  end

  // ---------------------------------------------------------------------------
  // Registers
  // ---------------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ctl_q  <= '0;
      ra_q   <= '0;
      st_q   <= '0;
      slot_q <= '0;
      w_q    <= '0;
      hold_q <= '0;
      gap_q  <= '0;
    end else begin
      ctl_q  <= ctl_d;
      ra_q   <= ra_d;
      st_q   <= st_d;
      slot_q <= slot_d;
      w_q    <= w_d;
      hold_q <= hold_d;
      gap_q  <= gap_d;
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

  // The engine uses one write ID and reads only the error bit of a response
  // (OKAY and EXOKAY alike).
  logic unused;
  assign unused = ^{bresp_i[0], rresp_i[0]};
  `ASSERT(BidIsWriteId_A, !bvalid_i || bid_i == WriteId, clk_i, rst_ni)

  `ASSERT_INIT(DataBytesPow2_A, DataBytes >= 4 && DataBytes <= 64 &&
                                (DataBytes & (DataBytes - 1)) == 0)
  `ASSERT_INIT(OutstandingPow2_A, MaxOutstanding >= 1 && MaxOutstanding <= 64 &&
                                  (MaxOutstanding & (MaxOutstanding - 1)) == 0)
  `ASSERT_INIT(BufHoldsTwoBursts_A, BufBytes >= 2 * MaxBurstBytes &&
                                    (BufBytes & (BufBytes - 1)) == 0)
  `ASSERT_INIT(QueuesFit_A, Queues >= 1 && Queues <= 64)

  `ASSERT(ArStable_A, !hold_q.ar || (arvalid_o && ar_payload == ar_payload_q), clk_i, rst_ni)
  `ASSERT(AwStable_A, !hold_q.aw || (awvalid_o && aw_payload == aw_payload_q), clk_i, rst_ni)
  `ASSERT(WStable_A, !w_hold_q || (wvalid_o && w_payload == w_payload_q), clk_i, rst_ni)
  `ASSERT(ArNo4KCross_A, !arvalid_o ||
          {1'b0, araddr_o[11:0]} + (13'(arlen_o) + 13'd1) * 13'(DataBytes) <= 13'd4096,
          clk_i, rst_ni)
  `ASSERT(AwNo4KCross_A, !awvalid_o ||
          {1'b0, awaddr_o[11:0]} + (13'(awlen_o) + 13'd1) * 13'(DataBytes) <= 13'd4096,
          clk_i, rst_ni)
  `ASSERT(WlastOnLastBeat_A, !wvalid_o ||
          wlast_o == (w_q.beat == {1'b0, beats_of(w_head.lane, w_head.bytes)}), clk_i, rst_ni)
  `ASSERT(WStrbNonZero_A, !wvalid_o || wstrb_o != '0, clk_i, rst_ni)
  `ASSERT(AwHasRoom_A, !aw_hs || (wq_wready && tag_wready), clk_i, rst_ni)
  `ASSERT(TagsMatchOutstanding_A, 9'(tag_depth) == w_q.outstanding, clk_i, rst_ni)
  `ASSERT(RidKnown_A, !rvalid_i || rid_i == FetchId || rid_i < IdWidth'(MaxOutstanding),
          clk_i, rst_ni)
  `ASSERT(RFetchOnlyWhenFetching_A, !r_fetch || fb_r_expected, clk_i, rst_ni)
  `ASSERT(RDataForLiveSlot_A, !r_data || (!slot_q[r_slot].done && r_rem != '0),
          clk_i, rst_ni)
  `ASSERT(RlastMatchesLength_A, !r_data || rlast_i == (r_rem == r_bytes),
          clk_i, rst_ni)
  `ASSERT(BNotUnexpected_A, !bvalid_i || w_q.outstanding != '0, clk_i, rst_ni)
  `ASSERT(CommitBeforeWrite_A, st_q.cons <= st_q.cmt && st_q.awp <= st_q.cmt &&
          st_q.cmt <= st_q.rsv, clk_i, rst_ni)
  `ASSERT(BufferNeverOverfull_A, st_q.rsv - st_q.cons <= 32'(BufBytes), clk_i, rst_ni)
  `ASSERT_KNOWN(AwValidKnown_A, awvalid_o, clk_i, rst_ni)
  `ASSERT_KNOWN(WValidKnown_A, wvalid_o, clk_i, rst_ni)
  `ASSERT_KNOWN(ArValidKnown_A, arvalid_o, clk_i, rst_ni)
endmodule
