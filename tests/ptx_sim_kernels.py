"""Hand-written PTX kernels for the simulator's tests (tests/test_ptx_simulator.py)
and its check against a real GPU (tools/ptx_sim_gpu_check.py): the four
kernels of ptx-notes.md section 1, completed, and broken variants that each
provoke one of the simulator's errors. numpy only (the GPU machine has no xDSL)."""

HEADER = """.version 8.0
.target sm_80
.address_size 64
"""

# (a) elementwise fma, 64-bit index, bounds check
FMA_F32 = HEADER + """
.visible .entry fma_f32(.param .u64 p_a, .param .u64 p_b, .param .u64 p_c, .param .u64 p_out,
                        .param .u64 p_n)
{
    .reg .pred %p<2>;
    .reg .u32 %r<4>;
    .reg .u64 %rd<14>;
    .reg .f32 %f<5>;
    ld.param.u64        %rd1, [p_a];
    ld.param.u64        %rd2, [p_b];
    ld.param.u64        %rd3, [p_c];
    ld.param.u64        %rd4, [p_out];
    ld.param.u64        %rd5, [p_n];
    mov.u32             %r1, %ctaid.x;
    mov.u32             %r2, %ntid.x;
    mov.u32             %r3, %tid.x;
    mul.wide.u32        %rd6, %r1, %r2;
    cvt.u64.u32         %rd7, %r3;
    add.s64             %rd8, %rd6, %rd7;
    setp.ge.u64         %p1, %rd8, %rd5;
    @%p1 bra            $L_done;
    cvta.to.global.u64  %rd1, %rd1;
    cvta.to.global.u64  %rd2, %rd2;
    cvta.to.global.u64  %rd3, %rd3;
    cvta.to.global.u64  %rd4, %rd4;
    shl.b64             %rd9, %rd8, 2;
    add.s64             %rd10, %rd1, %rd9;
    add.s64             %rd11, %rd2, %rd9;
    add.s64             %rd12, %rd3, %rd9;
    add.s64             %rd13, %rd4, %rd9;
    ld.global.nc.f32    %f1, [%rd10];
    ld.global.nc.f32    %f2, [%rd11];
    ld.global.nc.f32    %f3, [%rd12];
    fma.rn.f32          %f4, %f1, %f2, %f3;
    st.global.f32       [%rd13], %f4;
$L_done:
    ret;
}
"""

# (b) 16-byte vector loads, thread t handles 4t..4t+3, scalar tail loop for n % 4
FMA_F32_V4 = HEADER + """
.visible .entry fma_f32_v4(.param .u64 p_a, .param .u64 p_b, .param .u64 p_c, .param .u64 p_out,
                           .param .u64 p_n)
{
    .reg .pred %p<4>;
    .reg .u32 %r<4>;
    .reg .u64 %rd<16>;
    .reg .f32 %f<17>;
    ld.param.u64        %rd1, [p_a];
    ld.param.u64        %rd2, [p_b];
    ld.param.u64        %rd3, [p_c];
    ld.param.u64        %rd4, [p_out];
    ld.param.u64        %rd5, [p_n];
    mov.u32             %r1, %ctaid.x;
    mov.u32             %r2, %ntid.x;
    mov.u32             %r3, %tid.x;
    mul.wide.u32        %rd6, %r1, %r2;
    cvt.u64.u32         %rd7, %r3;
    add.s64             %rd8, %rd6, %rd7;
    shl.b64             %rd9, %rd8, 2;
    setp.ge.u64         %p1, %rd9, %rd5;
    @%p1 bra            $L_done;
    cvta.to.global.u64  %rd1, %rd1;
    cvta.to.global.u64  %rd2, %rd2;
    cvta.to.global.u64  %rd3, %rd3;
    cvta.to.global.u64  %rd4, %rd4;
    shl.b64             %rd10, %rd8, 4;
    add.s64             %rd11, %rd1, %rd10;
    add.s64             %rd12, %rd2, %rd10;
    add.s64             %rd13, %rd3, %rd10;
    add.s64             %rd14, %rd4, %rd10;
    add.s64             %rd15, %rd9, 4;
    setp.gt.u64         %p2, %rd15, %rd5;
    @%p2 bra            $L_tail;
    ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd11];
    ld.global.nc.v4.f32 {%f5, %f6, %f7, %f8}, [%rd12];
    ld.global.nc.v4.f32 {%f9, %f10, %f11, %f12}, [%rd13];
    fma.rn.f32          %f13, %f1, %f5, %f9;
    fma.rn.f32          %f14, %f2, %f6, %f10;
    fma.rn.f32          %f15, %f3, %f7, %f11;
    fma.rn.f32          %f16, %f4, %f8, %f12;
    st.global.v4.f32    [%rd14], {%f13, %f14, %f15, %f16};
    bra.uni             $L_done;
$L_tail:
    setp.ge.u64         %p3, %rd9, %rd5;
    @%p3 bra            $L_done;
    ld.global.nc.f32    %f1, [%rd11];
    ld.global.nc.f32    %f5, [%rd12];
    ld.global.nc.f32    %f9, [%rd13];
    fma.rn.f32          %f13, %f1, %f5, %f9;
    st.global.f32       [%rd14], %f13;
    add.s64             %rd11, %rd11, 4;
    add.s64             %rd12, %rd12, 4;
    add.s64             %rd13, %rd13, 4;
    add.s64             %rd14, %rd14, 4;
    add.s64             %rd9, %rd9, 1;
    bra.uni             $L_tail;
$L_done:
    ret;
}
"""

_SHFL5 = "".join(f"""
    shfl.sync.down.b32  %f2, %f1, {o}, 0x1f, 0xffffffff;
    add.rn.f32          %f1, %f1, %f2;""" for o in (16, 8, 4, 2, 1))

# (c) block sum: grid-stride accumulation, warp shuffles, per-warp partials in shared
# memory, warp 0 reduces them; out[ctaid.x] = the block's sum
BLOCK_SUM_F32 = HEADER + """
.visible .entry block_sum_f32(.param .u64 p_in, .param .u64 p_out, .param .u64 p_n)
.maxntid 1024, 1, 1
{
    .reg .pred %p<5>;
    .reg .u32 %r<14>;
    .reg .u64 %rd<12>;
    .reg .f32 %f<3>;
    .shared .align 4 .f32 s_warp[32];
    ld.param.u64        %rd1, [p_in];
    ld.param.u64        %rd2, [p_out];
    ld.param.u64        %rd3, [p_n];
    cvta.to.global.u64  %rd1, %rd1;
    cvta.to.global.u64  %rd2, %rd2;
    mov.u32             %r1, %tid.x;
    mov.u32             %r2, %ctaid.x;
    mov.u32             %r3, %ntid.x;
    mov.u32             %r4, %nctaid.x;
    mul.wide.u32        %rd4, %r2, %r3;
    cvt.u64.u32         %rd5, %r1;
    add.s64             %rd6, %rd4, %rd5;
    mul.wide.u32        %rd7, %r4, %r3;
    mov.f32             %f1, 0f00000000;
$L_loop:
    setp.ge.u64         %p1, %rd6, %rd3;
    @%p1 bra            $L_loop_end;
    shl.b64             %rd8, %rd6, 2;
    add.s64             %rd9, %rd1, %rd8;
    ld.global.nc.f32    %f2, [%rd9];
    add.rn.f32          %f1, %f1, %f2;
    add.s64             %rd6, %rd6, %rd7;
    bra.uni             $L_loop;
$L_loop_end:""" + _SHFL5 + """
    and.b32             %r5, %r1, 31;
    shr.u32             %r6, %r1, 5;
    mov.u32             %r7, s_warp;
    shl.b32             %r8, %r6, 2;
    add.s32             %r9, %r7, %r8;
    setp.eq.u32         %p2, %r5, 0;
    @%p2 st.shared.f32  [%r9], %f1;
    bar.sync            0;
    setp.ne.u32         %p3, %r6, 0;
    @%p3 bra            $L_done;
    add.u32             %r10, %r3, 31;
    shr.u32             %r11, %r10, 5;
    setp.lt.u32         %p4, %r5, %r11;
    mov.f32             %f1, 0f00000000;
    shl.b32             %r12, %r5, 2;
    add.s32             %r13, %r7, %r12;
    @%p4 ld.shared.f32  %f1, [%r13];""" + _SHFL5 + """
    mul.wide.u32        %rd10, %r2, 4;
    add.s64             %rd11, %rd2, %rd10;
    @%p2 st.global.f32  [%rd11], %f1;
$L_done:
    ret;
}
"""

# (d) 16x16 tiled SGEMM, row-major C[M,N] = A[M,K] @ B[K,N]; block (16,16),
# grid (ceil(N/16), ceil(M/16)); edges zero-padded in shared memory
SGEMM_TILED16 = HEADER + """
.visible .entry sgemm_tiled16(.param .u64 p_A, .param .u64 p_B, .param .u64 p_C,
                              .param .u32 p_M, .param .u32 p_N, .param .u32 p_K)
.reqntid 16, 16, 1
{
    .reg .pred %p<8>;
    .reg .u32 %r<25>;
    .reg .u64 %rd<13>;
    .reg .f32 %f<6>;
    .shared .align 16 .f32 sA[256];
    .shared .align 16 .f32 sB[256];
    ld.param.u64        %rd1, [p_A];
    ld.param.u64        %rd2, [p_B];
    ld.param.u64        %rd3, [p_C];
    ld.param.u32        %r1, [p_M];
    ld.param.u32        %r2, [p_N];
    ld.param.u32        %r3, [p_K];
    cvta.to.global.u64  %rd1, %rd1;
    cvta.to.global.u64  %rd2, %rd2;
    cvta.to.global.u64  %rd3, %rd3;
    mov.u32             %r4, %tid.x;
    mov.u32             %r5, %tid.y;
    mov.u32             %r6, %ctaid.x;
    mov.u32             %r7, %ctaid.y;
    mad.lo.u32          %r8, %r7, 16, %r5;
    mad.lo.u32          %r9, %r6, 16, %r4;
    setp.lt.u32         %p1, %r8, %r1;
    setp.lt.u32         %p2, %r9, %r2;
    mov.u32             %r10, sA;
    mov.u32             %r11, sB;
    mad.lo.u32          %r12, %r5, 16, %r4;
    shl.b32             %r12, %r12, 2;
    add.u32             %r13, %r10, %r12;
    add.u32             %r14, %r11, %r12;
    shl.b32             %r15, %r5, 6;
    add.u32             %r15, %r10, %r15;
    shl.b32             %r16, %r4, 2;
    add.u32             %r16, %r11, %r16;
    mov.f32             %f1, 0f00000000;
    mov.u32             %r19, 0;
$L_tile:
    setp.ge.u32         %p3, %r19, %r3;
    @%p3 bra            $L_end;
    add.u32             %r20, %r19, %r4;
    setp.lt.u32         %p4, %r20, %r3;
    and.pred            %p4, %p4, %p1;
    mov.f32             %f2, 0f00000000;
    cvt.u64.u32         %rd4, %r20;
    mad.wide.u32        %rd5, %r8, %r3, %rd4;
    shl.b64             %rd5, %rd5, 2;
    add.s64             %rd6, %rd1, %rd5;
    @%p4 ld.global.f32  %f2, [%rd6];
    st.shared.f32       [%r13], %f2;
    add.u32             %r21, %r19, %r5;
    setp.lt.u32         %p5, %r21, %r3;
    and.pred            %p5, %p5, %p2;
    mov.f32             %f3, 0f00000000;
    cvt.u64.u32         %rd7, %r9;
    mad.wide.u32        %rd8, %r21, %r2, %rd7;
    shl.b64             %rd8, %rd8, 2;
    add.s64             %rd9, %rd2, %rd8;
    @%p5 ld.global.f32  %f3, [%rd9];
    st.shared.f32       [%r14], %f3;
    bar.sync            0;
    mov.u32             %r22, 0;
    mov.u32             %r23, %r15;
    mov.u32             %r24, %r16;
$L_k:
    ld.shared.f32       %f4, [%r23];
    ld.shared.f32       %f5, [%r24];
    fma.rn.f32          %f1, %f4, %f5, %f1;
    add.u32             %r23, %r23, 4;
    add.u32             %r24, %r24, 64;
    add.u32             %r22, %r22, 1;
    setp.lt.u32         %p6, %r22, 16;
    @%p6 bra            $L_k;
    bar.sync            0;
    add.u32             %r19, %r19, 16;
    bra.uni             $L_tile;
$L_end:
    and.pred            %p7, %p1, %p2;
    @!%p7 bra           $L_done;
    mul.wide.u32        %rd10, %r8, %r2;
    cvt.u64.u32         %rd11, %r9;
    add.s64             %rd10, %rd10, %rd11;
    shl.b64             %rd10, %rd10, 2;
    add.s64             %rd12, %rd3, %rd10;
    st.global.f32       [%rd12], %f1;
$L_done:
    ret;
}
"""

GOOD = {"fma_f32": FMA_F32, "fma_f32_v4": FMA_F32_V4, "block_sum_f32": BLOCK_SUM_F32,
        "sgemm_tiled16": SGEMM_TILED16}

# Broken on purpose: each is still valid PTX (ptxas accepts it) and faults or races on a GPU.
# the first barrier removed: threads read sA/sB while others still write them
SGEMM_NO_BARRIER = SGEMM_TILED16.replace(
    "    st.shared.f32       [%r14], %f3;\n    bar.sync            0;\n",
    "    st.shared.f32       [%r14], %f3;\n")
# the bounds check wraps the barrier: a partial last block reaches it with part of its threads
BLOCK_SUM_BARRIER_IN_BOUNDS = BLOCK_SUM_F32.replace(
    "    @%p2 st.shared.f32  [%r9], %f1;\n    bar.sync            0;\n",
    "    @%p2 st.shared.f32  [%r9], %f1;\n    setp.ge.u64         %p1, %rd5, %rd3;\n"
    "    @%p1 bra            $L_done;\n    bar.sync            0;\n")
# no bounds check: threads past n read and write outside the buffers
FMA_F32_NO_BOUNDS = FMA_F32.replace("    @%p1 bra            $L_done;\n", "")


def fma_f32_exact(a, b, c):
    """float32 a*b+c rounded once, exactly (fractions), elementwise."""
    import numpy as np
    from fractions import Fraction
    out = np.empty(len(a), np.float32)
    for i, (x, y, z) in enumerate(zip(a.tolist(), b.tolist(), c.tolist())):
        if not all(map(np.isfinite, (x, y, z))):
            out[i] = np.float32(x * y + z)
            continue
        out[i] = round_fraction_f32(Fraction(x) * Fraction(y) + Fraction(z), x * y + z)
    return out


def round_fraction_f32(fr, approx):
    """A Fraction rounded to nearest-even float32 (approx: a float64 of the same
    value, for the sign of zero and the non-finite cases)."""
    import math
    import numpy as np
    from fractions import Fraction
    if not math.isfinite(approx):
        return np.float32(approx)
    if fr == 0:
        return np.float32(approx)
    sign = -1 if fr < 0 else 1
    x = abs(fr)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    e = max(e, -126)
    ulp = Fraction(2) ** (e - 23)
    n = round(x / ulp)        # half to even
    v = n * ulp
    if v >= Fraction(2) ** 128:
        return np.float32(sign * np.inf)
    return np.float32(sign * float(v))


# -- probes: one instruction over arrays, out[i] = op(in0[i], in1[i], ...) ------------------------

_SIZE = {"f16": 2, "b16": 2, "u16": 2, "s16": 2, "f32": 4, "u32": 4, "s32": 4, "b32": 4,
         "f64": 8, "u64": 8, "s64": 8, "b64": 8, "pred": 1}


def probe(body: str, srcs, dst: str, name: str = "probe") -> str:
    """A kernel computing ``out[i] = body(in0[i], in1[i], ...)`` for i < n:
    ``body`` is PTX using the sources %a0, %a1, ... (typed ``srcs``), the result
    %d (typed ``dst``) and a spare predicate %q. A .pred travels as one byte."""
    k = len(srcs)
    params = ", ".join([f".param .u64 p_in{j}" for j in range(k)] + [".param .u64 p_out", ".param .u32 p_n"])
    decl = ["    .reg .pred %pb;", "    .reg .pred %q;", "    .reg .u32 %i<5>;", "    .reg .u32 %n;",
            "    .reg .u32 %t<3>;", f"    .reg .u64 %rd<{2 * k + 4}>;"]
    decl += [f"    .reg .{t} %a{j};" for j, t in enumerate(srcs)]
    decl.append(f"    .reg .{dst} %d;")
    code = ["    mov.u32 %i0, %ctaid.x;", "    mov.u32 %i1, %ntid.x;", "    mov.u32 %i2, %tid.x;",
            "    mad.lo.u32 %i3, %i0, %i1, %i2;", "    ld.param.u32 %n, [p_n];",
            "    setp.ge.u32 %pb, %i3, %n;", "    @%pb bra $L_done;"]
    for j, t in enumerate(srcs):
        p, a = f"%rd{2 * j}", f"%rd{2 * j + 1}"
        code += [f"    ld.param.u64 {p}, [p_in{j}];", f"    cvta.to.global.u64 {p}, {p};",
                 f"    mul.wide.u32 {a}, %i3, {_SIZE[t]};", f"    add.s64 {a}, {p}, {a};"]
        if t == "pred":
            code += [f"    ld.global.u8 %t0, [{a}];", f"    setp.ne.u32 %a{j}, %t0, 0;"]
        else:
            code.append(f"    ld.global.{t} %a{j}, [{a}];")
    code += ["    " + line.strip() for line in body.strip().splitlines()]
    p, a = f"%rd{2 * k}", f"%rd{2 * k + 1}"
    code += [f"    ld.param.u64 {p}, [p_out];", f"    cvta.to.global.u64 {p}, {p};",
             f"    mul.wide.u32 {a}, %i3, {_SIZE[dst]};", f"    add.s64 {a}, {p}, {a};"]
    if dst == "pred":
        code += ["    selp.u32 %t1, 1, 0, %d;", f"    st.global.u8 [{a}], %t1;"]
    else:
        code.append(f"    st.global.{dst} [{a}], %d;")
    return (HEADER + f"\n.visible .entry {name}({params})\n{{\n" + "\n".join(decl) + "\n"
            + "\n".join(code) + "\n$L_done:\n    ret;\n}\n")


def float_inputs(np_dtype, n_random=200, seed=0):
    """Pairs (a, b) over the special values (zeros, infinities, NaN, subnormals,
    halves for rounding, extremes) crossed with each other, then random values."""
    import numpy as np
    dt = np.dtype(np_dtype)
    fi = np.finfo(dt)
    sp = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, fi.tiny, -fi.tiny, fi.tiny / 4,
                   fi.max, -fi.max, 0.5, 1.5, 2.5, -2.5, 3.0, 1e-3, 7.25, -1e4], dt)
    a, b = np.meshgrid(sp, sp)
    rng = np.random.default_rng(seed)
    r = (rng.standard_normal((2, n_random)) * 10.0 ** rng.integers(-5, 6, (2, n_random))).astype(dt)
    return np.concatenate([a.ravel(), r[0]]), np.concatenate([b.ravel(), r[1]])


def int_inputs(np_dtype, n_random=200, seed=0):
    import numpy as np
    dt = np.dtype(np_dtype)
    info = np.iinfo(dt)
    sp = [0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 1000, info.max, info.max - 1, info.min, info.min + 1]
    if info.min < 0:
        sp += [-1, -2, -3, -7, -1000]
    sp = np.array(sp, dtype=np.int64 if info.min < 0 else np.uint64).astype(dt)
    a, b = np.meshgrid(sp, sp)
    rng = np.random.default_rng(seed)
    r = rng.integers(info.min, info.max, (2, n_random), dtype=dt, endpoint=True)
    return np.concatenate([a.ravel(), r[0]]), np.concatenate([b.ravel(), r[1]])


# every special register of every thread: out[8 * i + k], i the thread's linear index in the grid
# (block-major, x fastest), k: tid.x, tid.y, tid.z, ctaid.x, ctaid.y, ctaid.z, laneid, and the warp
# index in the block (linear thread id / 32; %warpid is the physical slot, not that);
# and the dimensions in dims[0..5] (ntid.xyz, nctaid.xyz)
SPECIALS = HEADER + """
.visible .entry specials(.param .u64 p_out, .param .u64 p_dims)
{
    .reg .pred %p<2>;
    .reg .u32 %r<24>;
    .reg .u64 %rd<6>;
    ld.param.u64 %rd1, [p_out];
    ld.param.u64 %rd2, [p_dims];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %tid.y;
    mov.u32 %r3, %tid.z;
    mov.u32 %r4, %ctaid.x;
    mov.u32 %r5, %ctaid.y;
    mov.u32 %r6, %ctaid.z;
    mov.u32 %r7, %laneid;
    mov.u32 %r9, %ntid.x;
    mov.u32 %r10, %ntid.y;
    mov.u32 %r11, %ntid.z;
    mov.u32 %r12, %nctaid.x;
    mov.u32 %r13, %nctaid.y;
    mov.u32 %r14, %nctaid.z;
    mad.lo.u32 %r15, %r6, %r13, %r5;
    mad.lo.u32 %r15, %r15, %r12, %r4;
    mul.lo.u32 %r16, %r9, %r10;
    mul.lo.u32 %r16, %r16, %r11;
    mad.lo.u32 %r17, %r3, %r10, %r2;
    mad.lo.u32 %r17, %r17, %r9, %r1;
    shr.u32 %r8, %r17, 5;
    mad.lo.u32 %r18, %r15, %r16, %r17;
    mul.wide.u32 %rd3, %r18, 32;
    add.s64 %rd4, %rd1, %rd3;
    st.global.v4.u32 [%rd4], {%r1, %r2, %r3, %r4};
    st.global.v4.u32 [%rd4+16], {%r5, %r6, %r7, %r8};
    or.b32 %r19, %r15, %r17;
    setp.ne.u32 %p1, %r19, 0;
    @%p1 bra $L_done;
    st.global.v2.u32 [%rd2], {%r9, %r10};
    st.global.v2.u32 [%rd2+8], {%r11, %r12};
    st.global.v2.u32 [%rd2+16], {%r13, %r14};
$L_done:
    ret;
}
"""

# dynamic shared memory: each block reverses its slice of x through an .extern .shared array
REVERSE_DYNAMIC = HEADER + """
.extern .shared .align 16 .b8 smem[];

.visible .entry reverse_dynamic(.param .u64 p_x, .param .u64 p_out)
{
    .reg .u32 %r<10>;
    .reg .u64 %rd<8>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [p_x];
    ld.param.u64 %rd2, [p_out];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %ctaid.x;
    mad.lo.u32 %r4, %r3, %r2, %r1;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f1, [%rd4];
    mov.u32 %r5, smem;
    shl.b32 %r6, %r1, 2;
    add.u32 %r7, %r5, %r6;
    st.shared.f32 [%r7], %f1;
    bar.sync 0;
    sub.u32 %r8, %r2, %r1;
    sub.u32 %r8, %r8, 1;
    shl.b32 %r8, %r8, 2;
    add.u32 %r8, %r5, %r8;
    ld.shared.f32 %f1, [%r8];
    add.s64 %rd5, %rd2, %rd3;
    st.global.f32 [%rd5], %f1;
    ret;
}
"""
