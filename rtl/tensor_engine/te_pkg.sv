// Tensor engine: instruction fields and the bf16 / fp32 arithmetic of one PE.
//
// The arithmetic is bit for bit systemc_models/arch/numerics.h: an exact
// bf16 x bf16 product, an IEEE-754 binary32 round-to-nearest-even adder,
// subnormals flushed to signed zero on every input and result, every NaN result
// the canonical quiet NaN. Written as functions over at most 64-bit values so
// that the Verilated code stays scalar C++ in the PE loop.
package te_pkg;

  // Instruction opcodes (cmd_op_i).
  typedef enum logic {
    OpLoadStationary = 1'b0,
    OpMultiplyMoving = 1'b1
  } te_op_e;

  // Stationary weights held per PE. A LoadStationary fills the buffer after the
  // latest one's, so it may load while the multiplies of up to three earlier
  // stationaries are still in the array: with a load path several columns
  // wide, that is what lets the next load overlap a short multiply (the
  // number is not public; docs/tensor-engine.md, "Timing", says why four).
  localparam int unsigned WeightBuffers = 4;
  localparam int unsigned BufWidth = 2;
  typedef logic [BufWidth-1:0] buf_t;

  localparam logic [31:0] Fp32Nan   = 32'h7FC0_0000;
  // The partial sum that enters the top row. -0 + p == p for every p, so the
  // column sum starts from the first product, as the reference's does.
  localparam logic [31:0] Fp32NegZero = 32'h8000_0000;

  // bf16 x bf16 -> fp32. The 8 x 8-bit significand product is exact in fp32;
  // only the exponent can leave the normal range (flush or infinity).
  function automatic logic [31:0] bf16_mul(logic [15:0] a, logic [15:0] b);
    logic        sign;
    logic [7:0]  ea, eb;
    logic [15:0] prod;
    int          e;
    sign = a[15] ^ b[15];
    ea = a[14:7];
    eb = b[14:7];
    if (ea == 8'hFF || eb == 8'hFF) begin
      if ((ea == 8'hFF && a[6:0] != '0) || (eb == 8'hFF && b[6:0] != '0)) return Fp32Nan;
      if (ea == 8'h00 || eb == 8'h00) return Fp32Nan;  // inf x 0 (or a flushed subnormal)
      return {sign, 8'hFF, 23'h0};
    end
    if (ea == 8'h00 || eb == 8'h00) return {sign, 31'h0};
    prod = 16'({1'b1, a[6:0]}) * 16'({1'b1, b[6:0]});
    e = int'(ea) + int'(eb) - 127 + int'(prod[15]);
    if (e >= 255) return {sign, 8'hFF, 23'h0};
    if (e <= 0) return {sign, 31'h0};
    if (prod[15]) return {sign, e[7:0], prod[14:0], 8'h0};
    return {sign, e[7:0], prod[13:0], 9'h0};
  endfunction

  // fp32 + fp32, round-to-nearest-even, subnormals flushed on input and output.
  function automatic logic [31:0] fp32_add(logic [31:0] x, logic [31:0] y);
    logic [31:0] a, b;
    logic [7:0]  ea, eb, d;
    logic [63:0] sa, sb, s, rem, half;
    logic [23:0] m;
    int          p, sh, e;
    ea = x[30:23];
    eb = y[30:23];
    if (ea == 8'hFF || eb == 8'hFF) begin
      if ((ea == 8'hFF && x[22:0] != '0) || (eb == 8'hFF && y[22:0] != '0)) return Fp32Nan;
      if (ea == 8'hFF && eb == 8'hFF && x[31] != y[31]) return Fp32Nan;
      return (ea == 8'hFF) ? x : y;
    end
    if (ea == 8'h00) return (eb == 8'h00) ? {x[31] & y[31], 31'h0} : y;
    if (eb == 8'h00) return x;
    // a is the operand of larger magnitude; the result takes its sign.
    if (y[30:0] > x[30:0]) begin
      a = y;
      b = x;
    end else begin
      a = x;
      b = y;
    end
    d = a[30:23] - b[30:23];
    // b below a quarter ulp of a cannot move the rounded result (d >= 26).
    if (d > 8'd31) return a;
    // Both significands placed 32 bits up: alignment by d <= 31 loses no bit,
    // so the sum is exact before the one rounding below.
    sa = {8'h0, 1'b1, a[22:0], 32'h0};
    sb = {8'h0, 1'b1, b[22:0], 32'h0} >> d;
    s = (a[31] == b[31]) ? sa + sb : sa - sb;
    if (s == '0) return 32'h0;  // exact cancellation is +0
    // Leading one: 56 or 55 for any addition; lower only after cancellation.
    if (s[56]) begin
      p = 56;
    end else if (s[55]) begin
      p = 55;
    end else begin
      p = 0;
      if (s[55:32] == '0) begin
        s = s << 24;
        p = p - 24;
      end
      if (s[55:44] == '0) begin
        s = s << 12;
        p = p - 12;
      end
      if (s[55:50] == '0) begin
        s = s << 6;
        p = p - 6;
      end
      if (s[55:53] == '0) begin
        s = s << 3;
        p = p - 3;
      end
      if (s[55:54] == '0) begin
        s = s << 2;
        p = p - 2;
      end
      if (!s[55]) begin
        s = s << 1;
        p = p - 1;
      end
      p = p + 55;
    end
    // After a left normalisation s has its leading one at 55 again (shifted
    // zeros below are exact), so p only sets the exponent.
    e = int'(a[30:23]) + p - 55;
    sh = (p == 56) ? 33 : 32;
    m = 24'(s >> sh);
    rem = s & ((64'h1 << sh) - 64'h1);
    half = 64'h1 << (sh - 1);
    if (rem > half || (rem == half && m[0])) begin
      if (m == 24'hFF_FFFF) begin
        m = 24'h80_0000;
        e = e + 1;
      end else begin
        m = m + 24'h1;
      end
    end
    if (e >= 255) return {a[31], 8'hFF, 23'h0};
    if (e <= 0) return {a[31], 31'h0};
    return {a[31], e[7:0], m[22:0]};
  endfunction

endpackage
