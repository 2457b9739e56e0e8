// Tensor engine: instruction fields and the arithmetic of one PE in every
// input format (bf16, fp32, fp8 E4M3 / E5M2, and MX: fp8 or fp4 E2M1 with
// E8M0 scales).
//
// The arithmetic is bit for bit systemc_models/arch/numerics.h: exact bf16,
// fp8 and fp4 products (MX products scaled by both groups' scales), an fp32
// product rounded once, an IEEE-754 binary32 round-to-nearest-even adder,
// fp32 subnormals flushed to signed zero on every input and result, every NaN
// result the canonical quiet NaN. Written as functions over at most 64-bit
// values so that the Verilated code stays scalar C++ in the PE loop.
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

  // Element formats (cmd_fmt_i); the codes are arch::ElementFormat's.
  typedef enum logic [2:0] {
    FmtBf16 = 3'd0,
    FmtFp32 = 3'd1,
    FmtE4m3 = 3'd2,
    FmtE5m2 = 3'd3,
    FmtE2m1 = 3'd4
  } fmt_e;

  // Elements per PE word (cmd_pack_i): 1, 2 (fp8 double row) or 4 (MX quad),
  // as log2.
  typedef logic [1:0] pack_t;

  // A moving element in the array, 64 bits: the PE word, the MX scale of its
  // row group, and what the PE needs to multiply it: valid, weight buffer,
  // its format, the stationary's format, elements per word, MX.
  localparam int unsigned XScale   = 32;  // [39:32]
  localparam int unsigned XValid   = 40;
  localparam int unsigned XSel     = 41;  // [42:41]
  localparam int unsigned XMvFmt   = 43;  // [45:43]
  localparam int unsigned XStFmt   = 46;  // [48:46]
  localparam int unsigned XPack    = 49;  // [50:49]
  localparam int unsigned XMx      = 51;

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

  // fp32 x fp32 -> fp32: the exact 48-bit significand product, rounded once
  // to nearest even; an exact product below 2^-126 is a signed zero (the
  // test is on the exact exponent, before rounding); subnormal inputs read as
  // signed zeros.
  function automatic logic [31:0] fp32_mul(logic [31:0] a, logic [31:0] b);
    logic        sign;
    logic [7:0]  ea, eb;
    logic [47:0] prod, rem, half;
    logic [24:0] m;
    int          e;
    sign = a[31] ^ b[31];
    ea = a[30:23];
    eb = b[30:23];
    if ((ea == 8'hFF && a[22:0] != '0) || (eb == 8'hFF && b[22:0] != '0)) return Fp32Nan;
    if (ea == 8'hFF || eb == 8'hFF) begin
      if (ea == 8'h00 || eb == 8'h00) return Fp32Nan;  // inf x 0 (or a flushed subnormal)
      return {sign, 8'hFF, 23'h0};
    end
    if (ea == 8'h00 || eb == 8'h00) return {sign, 31'h0};
    prod = 48'({1'b1, a[22:0]}) * 48'({1'b1, b[22:0]});
    e = int'(ea) + int'(eb) - 127 + int'(prod[47]);
    if (e <= 0) return {sign, 31'h0};
    if (prod[47]) begin
      m = {1'b0, prod[47:24]};
      rem = {24'h0, prod[23:0]};
      half = 48'h80_0000;
    end else begin
      m = {1'b0, prod[46:23]};
      rem = {25'h0, prod[22:0]};
      half = 48'h40_0000;
    end
    if (rem > half || (rem == half && m[0])) m = m + 25'h1;
    if (m[24]) begin  // rounded up to the next binade
      m = 25'h80_0000;
      e = e + 1;
    end
    if (e >= 255) return {sign, 8'hFF, 23'h0};
    return {sign, e[7:0], m[22:0]};
  endfunction

  // A narrow element (fp8 E4M3 / E5M2 in 8 bits, fp4 E2M1 in the low 4) as
  // significand x 2^exponent, exactly; subnormals are values here.
  typedef struct packed {
    logic       nan;
    logic       inf;
    logic       sign;
    logic [3:0] sig;
    logic [6:0] exp;  // two's complement: -16 .. 8
  } narrow_t;

  function automatic narrow_t narrow_decode(fmt_e f, logic [7:0] v);
    narrow_t d;
    d = '0;
    case (f)
      FmtE4m3: begin
        d.sign = v[7];
        d.nan = v[6:0] == 7'h7F;
        d.sig = (v[6:3] == 4'h0) ? {1'b0, v[2:0]} : {1'b1, v[2:0]};
        d.exp = (v[6:3] == 4'h0) ? -7'sd9 : 7'(int'(v[6:3]) - 10);
      end
      FmtE5m2: begin
        d.sign = v[7];
        d.nan = v[6:2] == 5'h1F && v[1:0] != 2'h0;
        d.inf = v[6:2] == 5'h1F && v[1:0] == 2'h0;
        d.sig = (v[6:2] == 5'h0) ? {2'b0, v[1:0]} : {2'b01, v[1:0]};
        d.exp = (v[6:2] == 5'h0) ? -7'sd16 : 7'(int'(v[6:2]) - 17);
      end
      default: begin  // FmtE2m1
        d.sign = v[3];
        d.sig = (v[2:1] == 2'h0) ? {3'b0, v[0]} : {2'b0, 1'b1, v[0]};
        d.exp = (v[2:1] == 2'h0) ? -7'sd1 : 7'(int'(v[2:1]) - 2);
      end
    endcase
    return d;
  endfunction

  // The product of two narrow elements, times 2^(sa + sb - 254) in MX mode:
  // exact (at most 4 x 4 significand bits) unless it leaves fp32's normal
  // range, where it is a signed zero (below 2^-126) or infinity.
  function automatic logic [31:0] narrow_mul(fmt_e fa, logic [7:0] a, fmt_e fb, logic [7:0] b, logic mx,
                                             logic [7:0] sa, logic [7:0] sb);
    narrow_t     x, y;
    logic        sign;
    logic [7:0]  prod;
    logic [22:0] frac;
    int          e, lead;
    x = narrow_decode(fa, a);
    y = narrow_decode(fb, b);
    sign = x.sign ^ y.sign;
    if (x.nan || y.nan || (mx && (sa == 8'hFF || sb == 8'hFF))) return Fp32Nan;
    if ((x.inf && !y.inf && y.sig == '0) || (y.inf && !x.inf && x.sig == '0)) return Fp32Nan;
    if (x.inf || y.inf) return {sign, 8'hFF, 23'h0};
    prod = 8'(x.sig) * 8'(y.sig);
    if (prod == '0) return {sign, 31'h0};
    lead = prod[7] ? 7 : prod[6] ? 6 : prod[5] ? 5 : prod[4] ? 4 : prod[3] ? 3 : prod[2] ? 2 : prod[1] ? 1 : 0;
    e = int'($signed(x.exp)) + int'($signed(y.exp)) + lead + 127;
    if (mx) e = e + int'(sa) + int'(sb) - 254;
    if (e <= 0) return {sign, 31'h0};
    if (e >= 255) return {sign, 8'hFF, 23'h0};
    frac = 23'({prod, 23'h0} >> lead);  // the bits below the leading one
    return {sign, e[7:0], frac};
  endfunction

  // Element j of a PE word of format f (8 bits per fp8, 4 per fp4).
  function automatic logic [7:0] narrow_element(fmt_e f, logic [31:0] w, int j);
    if (f == FmtE2m1) return {4'h0, 4'(w >> (4 * j))};
    return 8'(w >> (8 * j));
  endfunction

  // One PE step: psum + the products of moving element x with weight word w
  // (and its MX scale ws), in the reference's order: bf16 and fp32 one
  // product; fp8 and MX their 1, 2 or 4 products one after the other, each
  // addition rounded.
  function automatic logic [31:0] pe_mac(logic [31:0] psum, logic [63:0] x, logic [31:0] w, logic [7:0] ws);
    fmt_e        mf, sf;
    logic [31:0] s;
    int          n;
    mf = fmt_e'(x[XMvFmt +: 3]);
    sf = fmt_e'(x[XStFmt +: 3]);
    if (mf == FmtBf16) return fp32_add(psum, bf16_mul(x[15:0], w[15:0]));
    if (mf == FmtFp32) return fp32_add(psum, fp32_mul(x[31:0], w));
    s = psum;
    n = 1 << int'(x[XPack +: 2]);
    for (int j = 0; j < 4; j++) begin
      if (j < n)
        s = fp32_add(s, narrow_mul(sf, narrow_element(sf, w, j), mf, narrow_element(mf, x[31:0], j), x[XMx],
                                   ws, x[XScale +: 8]));
    end
    return s;
  endfunction

endpackage
