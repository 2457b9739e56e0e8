// Types and helpers shared by the DMA engine's units (registers, fetch,
// descriptor check, completion, the engine itself). The host-visible contract
// (descriptor, registers, error codes) is tsr_dma_pkg, generated from
// rtl/dma/gen_dma_contract.py; this package holds only the engine's internals.
package tsr_dma_unit_pkg;

  // One queue's registers and the state the engine keeps beside them.
  typedef struct packed {
    logic [47:0] base;  // Q_BASE
    logic [23:0] size;  // Q_SIZE
    logic [23:0] head;  // Q_HEAD: next descriptor to complete
    logic [23:0] tail;  // Q_TAIL: the doorbell
    logic [23:0] next;  // next descriptor to fetch
    logic [23:0] info;  // Q_ERR_INFO: ring index of the failed descriptor
    logic [7:0]  code;  // Q_STATUS error code
    logic        en;    // Q_CTRL enable
    logic        err;   // Q_STATUS error: the queue is stopped
    logic        last;  // Q_STATUS LAST_SEEN
  } queue_t;

  // Bursts are at most 256 beats and never cross a 4 KiB page.
  function automatic int unsigned max_burst_bytes(int unsigned data_bytes);
    return (256 * data_bytes < 4096) ? 256 * data_bytes : 4096;
  endfunction

  // The inclusive byte range [lo, hi_incl] lies in the window [wb, wl) and
  // does not wrap.
  function automatic logic in_window(logic [63:0] lo, logic [63:0] hi_incl, logic [47:0] wb,
                                     logic [47:0] wl);
    return lo >= {16'b0, wb} && hi_incl < {16'b0, wl} && hi_incl >= lo;
  endfunction

  // The ring index after `index` in a ring of `size` descriptors.
  function automatic logic [23:0] ring_next(logic [23:0] index, logic [23:0] size);
    return (index + 24'd1 == size) ? '0 : index + 24'd1;
  endfunction

endpackage
