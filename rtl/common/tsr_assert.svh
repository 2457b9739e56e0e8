// Assertion macros shared by every Tessera RTL block.
//
// Built with --assert, a failing assertion stops the
// simulation with the assertion's name, the file and the line. They are
// disabled while reset is asserted (reset is active low).
`ifndef TSR_ASSERT_SVH
`define TSR_ASSERT_SVH

// ASSERT(Name, property, clock, active-low reset): checked at each rising edge.
`define ASSERT(__name, __prop, __clk, __rst_n) \
  __name: assert property (@(posedge __clk) disable iff (!(__rst_n)) (__prop)) \
    else $error("assertion %s failed", `"__name`");

// ASSERT_KNOWN(Name, signal, clock, active-low reset): no X or Z after reset.
`define ASSERT_KNOWN(__name, __sig, __clk, __rst_n) \
  `ASSERT(__name, !$isunknown(__sig), __clk, __rst_n)

// ASSERT_INIT(Name, expression): an elaboration-time check on parameters.
`define ASSERT_INIT(__name, __prop) \
  initial begin : __name \
    if (!(__prop)) $fatal(1, "parameter check %s failed", `"__name`"); \
  end

`endif  // TSR_ASSERT_SVH
