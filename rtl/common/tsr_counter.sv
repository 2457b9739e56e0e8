// Saturating event counter: the performance-counter primitive of every block.
module tsr_counter #(
  parameter int unsigned Width = 32
) (
  input  logic             clk_i,
  input  logic             rst_ni,

  input  logic             clear_i,  // synchronous clear, wins over incr_i
  input  logic             incr_i,   // count one event this cycle
  output logic [Width-1:0] count_o,
  output logic             saturated_o
);
  `include "tsr_assert.svh"

  logic [Width-1:0] count_d, count_q;

  assign saturated_o = &count_q;

  always_comb begin
    count_d = count_q;
    if (clear_i) begin
      count_d = '0;
    end else if (incr_i && !saturated_o) begin
      count_d = count_q + 1'b1;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      count_q <= '0;
    end else begin
      count_q <= count_d;
    end
  end

  assign count_o = count_q;

  `ASSERT_INIT(WidthNonZero_A, Width > 0)
  `ASSERT(NeverWraps_A, !(saturated_o && incr_i && !clear_i) || count_d == count_q, clk_i, rst_ni)
  `ASSERT_KNOWN(CountKnown_A, count_o, clk_i, rst_ni)
endmodule
