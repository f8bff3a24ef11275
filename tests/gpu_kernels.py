"""Hand-written L4 kernels (docs/gpu.md) for the PTX printer's, ptxas's and the
simulator's tests: each builder returns a ``GpuCase``: an L4 module text with
one kernel, how to launch it on given inputs, and numpy's answer.

- ``elementwise()``: out = a * b + a over n elements, a grid-stride loop of
  16-byte vector accesses (width 4) and a scalar tail;
- ``block_sum()``: out[block] = the sum of that block's grid-stride share of
  x: warp shuffles, per-warp partial sums in shared memory, a barrier, the
  first warp reduces them;
- ``matmul16()``: C = A @ B in 16x16 tiles staged in shared memory (zero
  padded at the edges), two barriers per tile.

A launch's ``args`` are what the driver passes (docs/gpu.md's Driver.launch):
numpy arrays for pointers (the runner allocates and copies them) and numpy
scalars.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class GpuCase:
    name: str                     # the kernel's name
    text: str                     # the L4 module (a builtin.module holding gpu.module @kernels)
    block: tuple[int, int, int]
    grid: Callable                # inputs -> (gx, gy, gz)
    args: Callable                # inputs -> kernel arguments (arrays for pointers, numpy scalars)
    outputs: tuple[int, ...]      # which arguments the kernel writes
    reference: Callable           # inputs -> the expected output arrays, in the order of ``outputs``
    budget_registers: int = 64
    budget_shared: int = 1024
    notes: dict = field(default_factory=dict)

    def module(self):
        from tfc.dialects.tensor import parse_module
        return parse_module(self.text)


def _wrap(kernel: str) -> str:
    return 'builtin.module {\n  "gpu.module"() <{sym_name = "kernels"}> ({\n' + kernel + "  }) : () -> ()\n}\n"


def _func(name, params, block, body, extra_attrs=""):
    types = ", ".join(t for _, t in params)
    args = ", ".join(f"{n}: {t}" for n, t in params)
    bs = ", ".join(str(b) for b in block)
    return (f'    "gpu.func"() <{{function_type = ({types}) -> (), kernel}}> ({{\n'
            f"    ^bb0({args}):\n{body}"
            f'      "gpu.return"() : () -> ()\n'
            f'    }}) {{sym_name = "{name}", gpu.known_block_size = array<i32: {bs}>{extra_attrs}}} : () -> ()\n')


_IDS = """      %tid0 = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %bid0 = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %bdim0 = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
      %gdim0 = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
      %tid = arith.index_cast %tid0 : index to i32
      %bid = arith.index_cast %bid0 : index to i32
      %bdim = arith.index_cast %bdim0 : index to i32
      %gdim = arith.index_cast %gdim0 : index to i32
"""

PF = "!tgpu.ptr<f32, global>"


def elementwise(block: int = 256) -> GpuCase:
    body = _IDS + f"""      %gbase = arith.muli %bid, %bdim : i32
      %gtid = arith.addi %gbase, %tid : i32
      %stride = arith.muli %gdim, %bdim : i32
      %c4 = arith.constant 4 : i32
      %nvec = arith.divsi %n, %c4 : i32
      scf.for %q = %gtid to %nvec step %stride : i32 {{
        %i = arith.muli %q, %c4 : i32
        %a0, %a1, %a2, %a3 = tgpu.load %a[%i] {{width = 4, nc}} : {PF}, i32
        %b0, %b1, %b2, %b3 = tgpu.load %b[%i] {{width = 4, nc}} : {PF}, i32
        %m0 = arith.mulf %a0, %b0 : f32
        %m1 = arith.mulf %a1, %b1 : f32
        %m2 = arith.mulf %a2, %b2 : f32
        %m3 = arith.mulf %a3, %b3 : f32
        %r0 = arith.addf %m0, %a0 : f32
        %r1 = arith.addf %m1, %a1 : f32
        %r2 = arith.addf %m2, %a2 : f32
        %r3 = arith.addf %m3, %a3 : f32
        tgpu.store %r0, %r1, %r2, %r3, %out[%i] : {PF}, i32
      }}
      %tail = arith.muli %nvec, %c4 : i32
      %start = arith.addi %tail, %gtid : i32
      scf.for %i = %start to %n step %stride : i32 {{
        %x = tgpu.load %a[%i] {{nc}} : {PF}, i32
        %y = tgpu.load %b[%i] {{nc}} : {PF}, i32
        %m = arith.mulf %x, %y : f32
        %r = arith.addf %m, %x : f32
        tgpu.store %r, %out[%i] : {PF}, i32
      }}
"""
    text = _wrap(_func("ew", [("%a", PF), ("%b", PF), ("%out", PF), ("%n", "i32")], (block, 1, 1), body))

    def grid(a, b):
        return (max(1, min(64, -(-a.size // (4 * block)))), 1, 1)

    return GpuCase(
        "ew", text, (block, 1, 1), grid,
        lambda a, b: [a, b, np.zeros_like(a), np.int32(a.size)], (2,),
        lambda a, b: [a * b + a])


def block_sum(block: int = 256) -> GpuCase:
    assert block % 32 == 0 and block <= 1024
    shuffles = "".join(
        f"""      %o{k}_{{w}} = arith.constant {k} : i32
      %t{k}_{{w}} = tgpu.shuffle down %s{{prev}}_{{w}}, %o{k}_{{w}} : f32
      %s{k}_{{w}} = arith.addf %s{{prev}}_{{w}}, %t{k}_{{w}} : f32
""" for k in (16, 8, 4, 2, 1))

    def warp_sum(w, src):
        out, prev = [], src
        for k in (16, 8, 4, 2, 1):
            out.append(f"""      %o{k}_{w} = arith.constant {k} : i32
      %t{k}_{w} = tgpu.shuffle down {prev}, %o{k}_{w} : f32
      %s{k}_{w} = arith.addf {prev}, %t{k}_{w} : f32
""")
            prev = f"%s{k}_{w}"
        return "".join(out), prev

    del shuffles
    s1, r1 = warp_sum("a", "%acc")
    s2, r2 = warp_sum("b", "%part")
    nwarps = block // 32
    body = _IDS + f"""      %gbase = arith.muli %bid, %bdim : i32
      %gtid = arith.addi %gbase, %tid : i32
      %stride = arith.muli %gdim, %bdim : i32
      %zero = arith.constant 0.0 : f32
      %acc = scf.for %i = %gtid to %n step %stride iter_args(%s = %zero) -> (f32) : i32 {{
        %v = tgpu.load %x[%i] {{nc}} : {PF}, i32
        %s2 = arith.addf %s, %v : f32
        scf.yield %s2 : f32
      }}
{s1}      %c31 = arith.constant 31 : i32
      %c5 = arith.constant 5 : i32
      %c0 = arith.constant 0 : i32
      %lane = arith.andi %tid, %c31 : i32
      %warp = arith.shrui %tid, %c5 : i32
      %smem = tgpu.shared {{size = 32}} : !tgpu.ptr<f32, shared>
      %first = arith.cmpi eq, %lane, %c0 : i32
      scf.if %first {{
        tgpu.store {r1}, %smem[%warp] : !tgpu.ptr<f32, shared>, i32
      }}
      "gpu.barrier"() : () -> ()
      %w0 = arith.cmpi eq, %warp, %c0 : i32
      scf.if %w0 {{
        %nw = arith.constant {nwarps} : i32
        %has = arith.cmpi slt, %lane, %nw : i32
        %part = scf.if %has -> (f32) {{
          %p = tgpu.load %smem[%lane] : !tgpu.ptr<f32, shared>, i32
          scf.yield %p : f32
        }} else {{
          scf.yield %zero : f32
        }}
{s2}        %t0 = arith.cmpi eq, %tid, %c0 : i32
        scf.if %t0 {{
          tgpu.store {r2}, %out[%bid] : {PF}, i32
        }}
      }}
"""
    text = _wrap(_func("block_sum", [("%x", PF), ("%out", PF), ("%n", "i32")], (block, 1, 1), body))

    def grid(x):
        return (max(1, min(32, -(-x.size // block))), 1, 1)

    def reference(x):
        g = grid(x)[0]
        stride = g * block
        out = np.zeros(g, np.float32)
        for b in range(g):
            idx = [i for t in range(block) for i in range(b * block + t, x.size, stride)]
            out[b] = np.sum(x[idx], dtype=np.float64)
        return [out]

    return GpuCase("block_sum", text, (block, 1, 1), grid,
                   lambda x: [x, np.zeros(grid(x)[0], np.float32), np.int32(x.size)], (1,), reference,
                   notes={"tolerance": "float32 sums in another order: rtol 1e-5 of sum(|x|)"})


def matmul16() -> GpuCase:
    SP = "!tgpu.ptr<f32, shared>"
    body = """      %tx0 = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %ty0 = "gpu.thread_id"() <{dimension = #gpu<dim y>}> : () -> index
      %bx0 = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %by0 = "gpu.block_id"() <{dimension = #gpu<dim y>}> : () -> index
      %tx = arith.index_cast %tx0 : index to i32
      %ty = arith.index_cast %ty0 : index to i32
      %bx = arith.index_cast %bx0 : index to i32
      %by = arith.index_cast %by0 : index to i32
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %c16 = arith.constant 16 : i32
      %zero = arith.constant 0.0 : f32
      %rb = arith.muli %by, %c16 : i32
      %row = arith.addi %rb, %ty : i32
      %cb = arith.muli %bx, %c16 : i32
      %col = arith.addi %cb, %tx : i32
      %sa = tgpu.shared {size = 256} : SP
      %sb = tgpu.shared {size = 256} : SP
      %t16 = arith.muli %ty, %c16 : i32
      %me = arith.addi %t16, %tx : i32
      %rowok = arith.cmpi slt, %row, %m : i32
      %colok = arith.cmpi slt, %col, %n : i32
      %acc = scf.for %t = %c0 to %k step %c16 iter_args(%s = %zero) -> (f32) : i32 {
        %ak = arith.addi %t, %tx : i32
        %akok = arith.cmpi slt, %ak, %k : i32
        %aok = arith.andi %rowok, %akok : i1
        %av = scf.if %aok -> (f32) {
          %rk = arith.muli %row, %k : i32
          %ai = arith.addi %rk, %ak : i32
          %v = tgpu.load %A[%ai] {nc} : PF, i32
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        tgpu.store %av, %sa[%me] : SP, i32
        %bk = arith.addi %t, %ty : i32
        %bkok = arith.cmpi slt, %bk, %k : i32
        %bok = arith.andi %bkok, %colok : i1
        %bv = scf.if %bok -> (f32) {
          %kn = arith.muli %bk, %n : i32
          %bi = arith.addi %kn, %col : i32
          %v = tgpu.load %B[%bi] {nc} : PF, i32
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        tgpu.store %bv, %sb[%me] : SP, i32
        "gpu.barrier"() : () -> ()
        %s2 = scf.for %j = %c0 to %c16 step %c1 iter_args(%u = %s) -> (f32) : i32 {
          %ia = arith.addi %t16, %j : i32
          %j16 = arith.muli %j, %c16 : i32
          %ib = arith.addi %j16, %tx : i32
          %x = tgpu.load %sa[%ia] : SP, i32
          %y = tgpu.load %sb[%ib] : SP, i32
          %u2 = math.fma %x, %y, %u : f32
          scf.yield %u2 : f32
        }
        "gpu.barrier"() : () -> ()
        scf.yield %s2 : f32
      }
      %ok = arith.andi %rowok, %colok : i1
      scf.if %ok {
        %rn = arith.muli %row, %n : i32
        %ci = arith.addi %rn, %col : i32
        tgpu.store %acc, %C[%ci] : PF, i32
      }
""".replace("SP", SP).replace("PF", PF)
    text = _wrap(_func("matmul16", [("%A", PF), ("%B", PF), ("%C", PF), ("%m", "i32"), ("%n", "i32"),
                                    ("%k", "i32")], (16, 16, 1), body))

    def grid(a, b):
        return (-(-b.shape[1] // 16) or 1, -(-a.shape[0] // 16) or 1, 1)

    return GpuCase("matmul16", text, (16, 16, 1), grid,
                   lambda a, b: [a, b, np.zeros((a.shape[0], b.shape[1]), np.float32), np.int32(a.shape[0]),
                                 np.int32(b.shape[1]), np.int32(a.shape[1])], (2,),
                   lambda a, b: [(a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)],
                   budget_registers=128, budget_shared=48 * 1024,
                   notes={"tolerance": "fma in k order: rtol 1e-5 of |A| @ |B|"})


ALL = (elementwise, block_sum, matmul16)


# -- one kernel per scalar op: out[i] = op(in0[i], in1[i], ...) --------------------------------
# (the printer's every mapping, for ptxas and for differential runs on the
# simulator or a GPU). Each entry: name, the op line (operands %x0, %x1, ...,
# result %r), operand types, result type, inputs (rng, n) -> arrays, numpy
# reference, exact (bitwise comparison) or else max ulp.

_NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "i1": np.bool_, "i8": np.int8,
       "f16": np.float16}


def _floats(t, special=True):
    def gen(rng, n):
        x = (rng.standard_normal(n) * rng.choice([1e-3, 1, 10, 1e4], n)).astype(_NP[t])
        if special and n >= 8:
            x[:8] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5, 0.5], _NP[t])
        return x
    return gen


# every pair of these: (-0.0, +0.0) and (+0.0, -0.0) give different bits in numpy's maximum/minimum
_PAIR_SPECIALS = (0.0, -0.0, np.nan, 1.0, -1.0, np.inf, -np.inf)


def _pair_floats(t, which):
    """Operand ``which`` (0 or 1) of a binary float op: the first 49 elements
    are every pair of ``_PAIR_SPECIALS``, the rest as ``_floats``."""
    def gen(rng, n):
        x = _floats(t)(rng, n)
        a, b = np.meshgrid(_PAIR_SPECIALS, _PAIR_SPECIALS)
        pairs = (a if which == 0 else b).ravel().astype(_NP[t])
        k = min(n, pairs.size)
        x[:k] = pairs[:k]
        return x
    return gen


def _cast_floats(t, bits):
    """Float inputs of a cast to a ``bits``-wide integer: NaN, infinities,
    values at, just below and beyond the integer range, then normal ones."""
    def gen(rng, n):
        x = (rng.standard_normal(n) * rng.choice([1, 1e3, 1e6, 2.0 ** (bits - 2)], n)).astype(_NP[t])
        lim = 2.0 ** (bits - 1)
        below = float(np.nextafter(_NP[t](lim), _NP[t](0)))
        special = np.array([np.nan, -np.nan, np.inf, -np.inf, lim, -lim, below, -below, 2 * lim, -2 * lim,
                            3e9, -3e9, 1e19, -1e19, 1e30, -1e30, 2.0 ** 63, 2.0 ** 64, 0.0, -0.0, 2.5, -2.5,
                            -0.7, 0.7], _NP[t])
        k = min(n, special.size)
        x[:k] = special[:k]
        return x
    return gen


def _ints(t, lo=-1000, hi=1000, nonzero=False):
    def gen(rng, n):
        x = rng.integers(lo, hi, n).astype(_NP[t])
        if nonzero:
            x[x == 0] = 7
        return x
    return gen


def _bools(rng, n):
    return rng.integers(0, 2, n).astype(np.bool_)


def _u(a):
    return a.view({4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)


def _round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.ones_like(x), x), t).astype(x.dtype)


_CMPF = {"oeq": lambda a, b: a == b, "one": lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b),
         "olt": np.less, "ole": np.less_equal, "ogt": np.greater, "oge": np.greater_equal,
         "ueq": lambda a, b: (a == b) | np.isnan(a) | np.isnan(b), "une": lambda a, b: a != b,
         "ult": lambda a, b: ~(a >= b), "ule": lambda a, b: ~(a > b), "ugt": lambda a, b: ~(a <= b),
         "uge": lambda a, b: ~(a < b), "ord": lambda a, b: ~np.isnan(a) & ~np.isnan(b),
         "uno": lambda a, b: np.isnan(a) | np.isnan(b)}
_CMPI = {"eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal, "sgt": np.greater,
         "sge": np.greater_equal, "ult": lambda a, b: _u(a) < _u(b), "ule": lambda a, b: _u(a) <= _u(b),
         "ugt": lambda a, b: _u(a) > _u(b), "uge": lambda a, b: _u(a) >= _u(b)}


def _op_table():
    T = []

    def add(name, line, ins, out, gens, ref, exact=True):
        T.append((name, line, ins, out, gens, ref, exact))

    for t in ("f32", "f64"):
        g = _floats(t)
        for op, fn in (("addf", np.add), ("subf", np.subtract), ("mulf", np.multiply), ("divf", np.divide),
                       ("maxnumf", np.fmax), ("minnumf", np.fmin)):
            add(f"{op}_{t}", f"%r = arith.{op} %x0, %x1 : {t}", [t, t], t, [g, g], fn)
        # numpy's maximum/minimum bit for bit: NaN propagates, equal operands (signed zeros) give the second
        for op, fn in (("maximumf", np.maximum), ("minimumf", np.minimum)):
            add(f"{op}_{t}", f"%r = arith.{op} %x0, %x1 : {t}", [t, t], t, [_pair_floats(t, 0), _pair_floats(t, 1)],
                fn)
        add(f"negf_{t}", f"%r = arith.negf %x0 : {t}", [t], t, [g], np.negative)
        for op, fn in (("sqrt", np.sqrt), ("absf", np.abs), ("floor", np.floor), ("ceil", np.ceil),
                       ("trunc", np.trunc), ("roundeven", np.rint), ("round", _round_half_away)):
            add(f"{op}_{t}", f"%r = math.{op} %x0 : {t}", [t], t, [g], fn)
        add(f"copysign_{t}", f"%r = math.copysign %x0, %x1 : {t}", [t, t], t, [g, g], np.copysign)
        add(f"rsqrt_{t}", f"%r = math.rsqrt %x0 : {t}", [t], t, [g],
            lambda x: (np.ones_like(x) / np.sqrt(x)).astype(x.dtype))
        for p, fn in _CMPF.items():
            add(f"cmpf_{p}_{t}", f"%r = arith.cmpf {p}, %x0, %x1 : {t}", [t, t], "i1", [g, g], fn)
        add(f"select_{t}", f"%r = arith.select %x0, %x1, %x2 : {t}", ["i1", t, t], t, [_bools, g, g],
            lambda c, a, b: np.where(c, a, b))
    for t in ("i32", "i64"):
        g, nz = _ints(t), _ints(t, nonzero=True)
        big = _ints(t, -2**31, 2**31 - 1) if t == "i32" else _ints(t, -2**62, 2**62)
        for op, fn in (("addi", np.add), ("subi", np.subtract), ("muli", np.multiply), ("maxsi", np.maximum),
                       ("minsi", np.minimum), ("andi", np.bitwise_and), ("ori", np.bitwise_or),
                       ("xori", np.bitwise_xor)):
            add(f"{op}_{t}", f"%r = arith.{op} %x0, %x1 : {t}", [t, t], t, [big, big], fn)
        add(f"maxui_{t}", f"%r = arith.maxui %x0, %x1 : {t}", [t, t], t, [big, big],
            lambda a, b: np.maximum(_u(a), _u(b)).view(a.dtype))
        add(f"minui_{t}", f"%r = arith.minui %x0, %x1 : {t}", [t, t], t, [big, big],
            lambda a, b: np.minimum(_u(a), _u(b)).view(a.dtype))
        add(f"divsi_{t}", f"%r = arith.divsi %x0, %x1 : {t}", [t, t], t, [g, nz], _trunc_div)
        add(f"remsi_{t}", f"%r = arith.remsi %x0, %x1 : {t}", [t, t], t, [g, nz], np.fmod)
        add(f"floordivsi_{t}", f"%r = arith.floordivsi %x0, %x1 : {t}", [t, t], t, [g, nz], np.floor_divide)
        add(f"ceildivsi_{t}", f"%r = arith.ceildivsi %x0, %x1 : {t}", [t, t], t, [g, nz],
            lambda a, b: -np.floor_divide(-a, b))
        add(f"divui_{t}", f"%r = arith.divui %x0, %x1 : {t}", [t, t], t, [g, nz],
            lambda a, b: (_u(a) // _u(b)).view(a.dtype))
        add(f"remui_{t}", f"%r = arith.remui %x0, %x1 : {t}", [t, t], t, [g, nz],
            lambda a, b: (_u(a) % _u(b)).view(a.dtype))
        add(f"absi_{t}", f"%r = math.absi %x0 : {t}", [t], t, [big], np.abs)  # the minimum wraps, as numpy
        w = 32 if t == "i32" else 64
        sh = _ints(t, 0, w)
        add(f"shli_{t}", f"%r = arith.shli %x0, %x1 : {t}", [t, t], t, [big, sh],
            lambda a, b: (_u(a) << _u(b)).view(a.dtype))
        add(f"shrsi_{t}", f"%r = arith.shrsi %x0, %x1 : {t}", [t, t], t, [big, sh], np.right_shift)
        add(f"shrui_{t}", f"%r = arith.shrui %x0, %x1 : {t}", [t, t], t, [big, sh],
            lambda a, b: (_u(a) >> _u(b)).view(a.dtype))
        for p, fn in _CMPI.items():
            add(f"cmpi_{p}_{t}", f"%r = arith.cmpi {p}, %x0, %x1 : {t}", [t, t], "i1", [g, g], fn)
        add(f"select_{t}", f"%r = arith.select %x0, %x1, %x2 : {t}", ["i1", t, t], t, [_bools, g, g],
            lambda c, a, b: np.where(c, a, b))
        add(f"sitofp_{t}_f32", f"%r = arith.sitofp %x0 : {t} to f32", [t], "f32", [big],
            lambda a: a.astype(np.float32))
        add(f"sitofp_{t}_f64", f"%r = arith.sitofp %x0 : {t} to f64", [t], "f64", [big],
            lambda a: a.astype(np.float64))
        add(f"uitofp_{t}_f32", f"%r = arith.uitofp %x0 : {t} to f32", [t], "f32", [big],
            lambda a: _u(a).astype(np.float32))
        # numpy's float -> int on x86: NaN, infinities and overflow give the lowest integer
        add(f"fptosi_f32_{t}", f"%r = arith.fptosi %x0 : f32 to {t}", ["f32"], t, [_cast_floats("f32", w)],
            lambda a, t=t: a.astype(_NP[t]))
        add(f"fptosi_f64_{t}", f"%r = arith.fptosi %x0 : f64 to {t}", ["f64"], t, [_cast_floats("f64", w)],
            lambda a, t=t: a.astype(_NP[t]))
    for op, fn in (("andi", np.logical_and), ("ori", np.logical_or), ("xori", np.logical_xor),
                   ("addi", np.logical_xor)):
        add(f"{op}_i1", f"%r = arith.{op} %x0, %x1 : i1", ["i1", "i1"], "i1", [_bools, _bools], fn)
    add("cmpi_eq_i1", "%r = arith.cmpi eq, %x0, %x1 : i1", ["i1", "i1"], "i1", [_bools, _bools], np.equal)
    add("cmpi_ne_i1", "%r = arith.cmpi ne, %x0, %x1 : i1", ["i1", "i1"], "i1", [_bools, _bools], np.not_equal)
    add("select_i1", "%r = arith.select %x0, %x1, %x2 : i1", ["i1", "i1", "i1"], "i1", [_bools] * 3,
        lambda c, a, b: np.where(c, a, b))
    add("extui_i1_i32", "%r = arith.extui %x0 : i1 to i32", ["i1"], "i32", [_bools], lambda a: a.astype(np.int32))
    add("extsi_i1_i32", "%r = arith.extsi %x0 : i1 to i32", ["i1"], "i32", [_bools],
        lambda a: -a.astype(np.int32))
    add("uitofp_i1_f32", "%r = arith.uitofp %x0 : i1 to f32", ["i1"], "f32", [_bools],
        lambda a: a.astype(np.float32))
    add("extsi_i32_i64", "%r = arith.extsi %x0 : i32 to i64", ["i32"], "i64", [_ints("i32", -2**31, 2**31 - 1)],
        lambda a: a.astype(np.int64))
    add("extui_i32_i64", "%r = arith.extui %x0 : i32 to i64", ["i32"], "i64", [_ints("i32", -2**31, 2**31 - 1)],
        lambda a: _u(a).astype(np.int64))
    add("trunci_i64_i32", "%r = arith.trunci %x0 : i64 to i32", ["i64"], "i32", [_ints("i64", -2**62, 2**62)],
        lambda a: a.astype(np.int32))
    add("trunci_i32_i1", "%r = arith.trunci %x0 : i32 to i1", ["i32"], "i1", [_ints("i32")],
        lambda a: (a & 1).astype(np.bool_))
    add("extsi_i8_i32", "%r = arith.extsi %x0 : i8 to i32", ["i8"], "i32", [_ints("i8", -128, 128)],
        lambda a: a.astype(np.int32))
    add("extui_i8_i32", "%r = arith.extui %x0 : i8 to i32", ["i8"], "i32", [_ints("i8", -128, 128)],
        lambda a: a.view(np.uint8).astype(np.int32))
    add("trunci_i32_i8", "%r = arith.trunci %x0 : i32 to i8", ["i32"], "i8", [_ints("i32", -2**31, 2**31 - 1)],
        lambda a: a.astype(np.int8))
    add("cmpi_ult_i8", "%r = arith.cmpi ult, %x0, %x1 : i8", ["i8", "i8"], "i1",
        [_ints("i8", -128, 128)] * 2, lambda a, b: a.view(np.uint8) < b.view(np.uint8))
    add("extf_f32_f64", "%r = arith.extf %x0 : f32 to f64", ["f32"], "f64", [_floats("f32")],
        lambda a: a.astype(np.float64))
    add("truncf_f64_f32", "%r = arith.truncf %x0 : f64 to f32", ["f64"], "f32", [_floats("f64")],
        lambda a: a.astype(np.float32))
    add("extf_f16_f32", "%r = arith.extf %x0 : f16 to f32", ["f16"], "f32", [_floats("f16")],
        lambda a: a.astype(np.float32))
    add("truncf_f32_f16", "%r = arith.truncf %x0 : f32 to f16", ["f32"], "f16", [_floats("f32")],
        lambda a: a.astype(np.float16))
    add("bitcast_f32_i32", "%r = arith.bitcast %x0 : f32 to i32", ["f32"], "i32", [_floats("f32")],
        lambda a: a.view(np.int32))
    add("bitcast_i64_f64", "%r = arith.bitcast %x0 : i64 to f64", ["i64"], "f64", [_ints("i64", -2**62, 2**62)],
        lambda a: a.view(np.float64))
    for t in ("i32", "i64"):
        add(f"ceildivui_{t}", f"%r = arith.ceildivui %x0, %x1 : {t}", [t, t], t,
            [_ints(t, 0, 100000), _ints(t, 1, 1000)], lambda a, b: -(-a // b))
        add(f"fptoui_f32_{t}", f"%r = arith.fptoui %x0 : f32 to {t}", ["f32"], t, [_ints("f32", 0, 10**6)],
            lambda a: a.astype(_NP[t]))
        add(f"fptoui_f64_{t}", f"%r = arith.fptoui %x0 : f64 to {t}", ["f64"], t, [_ints("f64", 0, 10**6)],
            lambda a: a.astype(_NP[t]))
        add(f"uitofp_{t}_f64", f"%r = arith.uitofp %x0 : {t} to f64", [t], "f64", [_ints(t, 0, 2**31 - 1)],
            lambda a: a.astype(np.float64))
    add("extf_f16_f64", "%r = arith.extf %x0 : f16 to f64", ["f16"], "f64", [_floats("f16")],
        lambda a: a.astype(np.float64))
    add("truncf_f64_f16", "%r = arith.truncf %x0 : f64 to f16", ["f64"], "f16", [_floats("f64")],
        lambda a: a.astype(np.float16))
    add("select_f16", "%r = arith.select %x0, %x1, %x2 : f16", ["i1", "f16", "f16"], "f16",
        [_bools, _floats("f16"), _floats("f16")], lambda c, a, b: np.where(c, a, b))
    add("constant_f16", "%c = arith.constant -1.5 : f16\n        %r = arith.select %x0, %c, %x1 : f16",
        ["i1", "f16"], "f16", [_bools, _floats("f16")], lambda c, a: np.where(c, np.float16(-1.5), a))
    add("constant_f64", "%c = arith.constant 0.1 : f64\n        %r = arith.addf %x0, %c : f64",
        ["f64"], "f64", [_floats("f64")], lambda a: a + 0.1)
    add("constant_i64", "%c = arith.constant -5000000000 : i64\n        %r = arith.addi %x0, %c : i64",
        ["i64"], "i64", [_ints("i64")], lambda a: a - 5000000000)
    add("constants_i1", "%c = arith.constant true\n        %d = arith.cmpf true, %x0, %x1 : f32\n"
        "        %f = arith.cmpf false, %x0, %x1 : f32\n        %g = arith.xori %d, %f : i1\n"
        "        %r = arith.andi %g, %c : i1", ["f32", "f32"], "i1", [_floats("f32")] * 2,
        lambda a, b: np.ones(a.shape, np.bool_))
    add("fma_f64", "%r = math.fma %x0, %x1, %x2 : f64", ["f64"] * 3, "f64", [_floats("f64", False)] * 3,
        lambda a, b, c: a * b + c, exact=False)
    add("fma_f32", "%r = math.fma %x0, %x1, %x2 : f32", ["f32"] * 3, "f32", [_floats("f32", False)] * 3,
        lambda a, b, c: (a.astype(np.float64) * b + c).astype(np.float32), exact=False)
    return T


OP_TABLE = _op_table()


def op_kernel(entry, index_type: str = "i32") -> GpuCase:
    """The kernel of one OP_TABLE entry: thread i (a grid-stride loop over n)
    reads in_k[i] for each operand, writes out[i]."""
    name, line, ins, out, gens, ref, exact = entry
    params = [(f"%in{k}", f"!tgpu.ptr<{t}, global>") for k, t in enumerate(ins)]
    params += [("%out", f"!tgpu.ptr<{out}, global>"), ("%n", index_type)]
    loads = "".join(f"        %x{k} = tgpu.load %in{k}[%i] : !tgpu.ptr<{t}, global>, {index_type}\n"
                    for k, t in enumerate(ins))
    it = index_type
    body = f"""      %tid0 = "gpu.thread_id"() <{{dimension = #gpu<dim x>}} : () -> index
      %bid0 = "gpu.block_id"() <{{dimension = #gpu<dim x>}} : () -> index
      %bdim0 = "gpu.block_dim"() <{{dimension = #gpu<dim x>}} : () -> index
      %gdim0 = "gpu.grid_dim"() <{{dimension = #gpu<dim x>}} : () -> index
      %g0 = arith.muli %bid0, %bdim0 : index
      %g1 = arith.addi %g0, %tid0 : index
      %s0 = arith.muli %gdim0, %bdim0 : index
      %start = arith.index_cast %g1 : index to {it}
      %stride = arith.index_cast %s0 : index to {it}
      scf.for %i = %start to %n step %stride : {it} {{
{loads}        {line}
        tgpu.store %r, %out[%i] : !tgpu.ptr<{out}, global>, {it}
      }}
""".replace("<{dimension = #gpu<dim x>} :", "<{dimension = #gpu<dim x>}> :")
    kname = f"op_{name}_{it}"
    text = _wrap(_func(kname, params, (128, 1, 1), body))

    def args(*xs):
        n = xs[0].size
        return [*xs, np.zeros(n, _NP[out]), _NP[it](n)]

    return GpuCase(kname, text, (128, 1, 1), lambda *xs: (max(1, min(8, -(-xs[0].size // 128))), 1, 1), args,
                   (len(ins),), lambda *xs: [np.asarray(ref(*xs)).astype(_NP[out])],
                   notes={"inputs": gens, "exact": exact})


def _wide(lo, hi):
    """float32 inputs spread over [lo, hi] (magnitudes log-uniform where the
    range spans orders of magnitude), plus the specials."""
    def gen(rng, n):
        if lo > 0:
            x = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
        else:
            m = max(abs(lo), hi)
            x = np.exp(rng.uniform(np.log(1e-30), np.log(m), n)) * rng.choice([-1, 1], n)
            x = np.clip(x, lo, hi)
        x = x.astype(np.float32)
        if n >= 8:
            x[:8] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5], np.float32)
        return x
    return gen


# float32 transcendental functions: (name, op, input range, numpy float64 function, max ulp error over
# every float32 input, measured on an H100 and stated in docs/ir-gpu-dialect.md)
TRANSCENDENTAL = [
    ("exp", "math.exp", (-110.0, 95.0), np.exp, 2.1),
    ("exp2", "math.exp2", (-160.0, 130.0), np.exp2, 2.1),
    ("log", "math.log", (1e-45, 3e38), np.log, 0.9),
    ("log2", "math.log2", (1e-45, 3e38), np.log2, 1.9),
    ("log10", "math.log10", (1e-45, 3e38), np.log10, 2.0),
    ("log1p", "math.log1p", (-1.0, 3e38), np.log1p, 2.5),
    ("expm1", "math.expm1", (-110.0, 95.0), np.expm1, 2.7),
    ("tanh", "math.tanh", (-20.0, 20.0), np.tanh, 1.6),
    ("sin", "math.sin", (-3e38, 3e38), np.sin, 0.51),
    ("cos", "math.cos", (-3e38, 3e38), np.cos, 0.51),
    ("tan", "math.tan", (-3e38, 3e38), np.tan, 0.51),
    ("erf", "math.erf", (-7.0, 7.0), lambda x: np.vectorize(math.erf, otypes=[np.float64])(x), 1.0),
]


def _pow_y(rng, n):
    """Exponents: integers (odd and even) a third of the time, else normal
    with a spread of scales, plus the specials."""
    y = (rng.standard_normal(n) * rng.choice([0.5, 3, 30], n)).astype(np.float32)
    y[::3] = np.rint(y[::3])
    if n >= 8:
        y[:8] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5], np.float32)
    return y


# binary: (name, op, x inputs, y inputs, numpy float64 function, max ulp (measured on an H100 over 2^26 random
# pairs and every pair of special values))
BINARY_TRANSCENDENTAL = [
    ("powf", "math.powf", _wide(-1e4, 1e4), _pow_y, np.power, 0.51),
]


def transcendental_entries():
    return ([(f"{n}_f32", f"%r = {op} %x0 : f32", ["f32"], "f32", [_wide(*rng)], ref, ulp)
             for n, op, rng, ref, ulp in TRANSCENDENTAL]
            + [(f"{n}_f32", f"%r = {op} %x0, %x1 : f32", ["f32", "f32"], "f32", [gx, gy], ref, ulp)
               for n, op, gx, gy, ref, ulp in BINARY_TRANSCENDENTAL])


def ulp_error(got, want64):
    """|got - want| in units of the last place of float32 at want (float64
    arithmetic); 0 where both are the same NaN/inf, inf where one is NaN or
    inf and the other not."""
    got = got.astype(np.float64)
    want32 = want64.astype(np.float32)
    same = (np.isnan(got) & np.isnan(want64)) | (got == want64) | (got == want32.astype(np.float64))
    spacing = np.spacing(np.abs(want32)).astype(np.float64)
    spacing = np.maximum(spacing, np.float64(np.spacing(np.float32(0))))
    err = np.abs(got - want64) / spacing
    err = np.where(np.isfinite(err), err, np.inf)
    return np.where(same, 0.0, err)


def copy_kernel(t: str, width: int, shared: bool, nc: bool, index_type: str = "i32") -> GpuCase:
    """out = in over n elements (n a multiple of ``width``): block-sized chunks
    through ``width``-element vector accesses, via a shared array (a barrier
    between its store and load) where ``shared``."""
    P = f"!tgpu.ptr<{t}, global>"
    S = f"!tgpu.ptr<{t}, shared>"
    it = index_type
    vals = ", ".join(f"%v{j}" for j in range(width))
    flags = ", ".join(x for x in ([f"width = {width}"] if width > 1 else []) + (["nc"] if nc else []))
    flags = f" {{{flags}}}" if flags else ""
    wflag = f" {{width = {width}}}" if width > 1 else ""
    if shared:
        move = f"""        tgpu.store {vals}, %sm[%local] : {S}, {it}
        "gpu.barrier"() : () -> ()
        {vals.replace('%v', '%w')} = tgpu.load %sm[%local]{wflag} : {S}, {it}
        tgpu.store {vals.replace('%v', '%w')}, %out[%i] : {P}, {it}
        "gpu.barrier"() : () -> ()
"""
    else:
        move = f"        tgpu.store {vals}, %out[%i] : {P}, {it}\n"
    body = f"""      %tid0 = "gpu.thread_id"() <{{dimension = #gpu<dim x>}}> : () -> index
      %bid0 = "gpu.block_id"() <{{dimension = #gpu<dim x>}}> : () -> index
      %tid = arith.index_cast %tid0 : index to {it}
      %bid = arith.index_cast %bid0 : index to {it}
      %w = arith.constant {width} : {it}
      %blk = arith.constant {64 * width} : {it}
      %local = arith.muli %tid, %w : {it}
      %base = arith.muli %bid, %blk : {it}
      %i = arith.addi %base, %local : {it}
      %sm = tgpu.shared {{size = {64 * width}}} : {S}
      %ok = arith.cmpi slt, %i, %n : {it}
      scf.if %ok {{
        {vals} = tgpu.load %in[%i]{flags} : {P}, {it}
{move}      }}
"""
    if shared:  # barriers outside the divergent branch: every thread loads (clamped) and stores where ok
        body = body.replace("scf.if %ok {{", "scf.if %ok {")
        body = f"""      %tid0 = "gpu.thread_id"() <{{dimension = #gpu<dim x>}}> : () -> index
      %bid0 = "gpu.block_id"() <{{dimension = #gpu<dim x>}}> : () -> index
      %tid = arith.index_cast %tid0 : index to {it}
      %bid = arith.index_cast %bid0 : index to {it}
      %w = arith.constant {width} : {it}
      %blk = arith.constant {64 * width} : {it}
      %local = arith.muli %tid, %w : {it}
      %base = arith.muli %bid, %blk : {it}
      %i = arith.addi %base, %local : {it}
      %sm = tgpu.shared {{size = {64 * width}}} : {S}
      %ok = arith.cmpi slt, %i, %n : {it}
      %zero = arith.constant 0 : {it}
      %j = arith.select %ok, %i, %zero : {it}
      {vals} = tgpu.load %in[%j]{flags} : {P}, {it}
      tgpu.store {vals}, %sm[%local] : {S}, {it}
      "gpu.barrier"() : () -> ()
      {vals.replace('%v', '%u')} = tgpu.load %sm[%local]{wflag} : {S}, {it}
      scf.if %ok {{
        tgpu.store {vals.replace('%v', '%u')}, %out[%i] : {P}, {it}
      }}
"""
    name = f"copy_{t}_v{width}{'_shared' if shared else ''}{'_nc' if nc else ''}_{it}"
    text = _wrap(_func(name, [("%in", P), ("%out", P), ("%n", it)], (64, 1, 1), body))
    return GpuCase(name, text, (64, 1, 1), lambda x: (max(1, -(-x.size // (64 * width))), 1, 1),
                   lambda x: [x, np.zeros_like(x), _NP[it](x.size)], (1,), lambda x: [x.copy()],
                   notes={"multiple_of": width})


def copy_kernels():
    out = []
    for t in ("f32", "f64", "i32", "i64", "i8", "i1", "f16"):
        size = {"f64": 8, "i64": 8, "f16": 2, "i8": 1, "i1": 1}.get(t, 4)
        for width in (1, 2, 4):
            if width * size > 16:
                continue
            for shared, nc in ((False, False), (False, True), (True, False)):
                out.append(copy_kernel(t, width, shared, nc))
    return out


def shuffle_kernel(mode: str, t: str = "f32") -> GpuCase:
    """out[i] = the shuffle ``mode`` of in[i] by off[i] (per lane; numpy reference: CUDA's rule)."""
    P = f"!tgpu.ptr<{t}, global>"
    Q = "!tgpu.ptr<i32, global>"
    body = f"""      %tid0 = "gpu.thread_id"() <{{dimension = #gpu<dim x>}}> : () -> index
      %i = arith.index_cast %tid0 : index to i32
      %v = tgpu.load %in[%i] : {P}, i32
      %o = tgpu.load %off[%i] : {Q}, i32
      %r = tgpu.shuffle {mode} %v, %o : {t}
      tgpu.store %r, %out[%i] : {P}, i32
"""
    name = f"shuffle_{mode}_{t}"
    text = _wrap(_func(name, [("%in", P), ("%off", Q), ("%out", P)], (64, 1, 1), body))

    def ref(x, off):
        off = off & 31  # PTX reads the low 5 bits of the offset / lane (checked on an H100)
        lane = np.arange(x.size) % 32
        warp = np.arange(x.size) - lane
        if mode == "down":
            src = np.where(lane + off <= 31, lane + off, lane)
        elif mode == "up":
            src = np.where(lane - off >= 0, lane - off, lane)
        elif mode == "xor":
            src = lane ^ off
        else:
            src = off & 31
        return [x[warp + src]]

    return GpuCase(name, text, (64, 1, 1), lambda x, off: (1, 1, 1), lambda x, off: [x, off, np.zeros_like(x)],
                   (2,), ref, notes={"size": 64, "offsets": "per lane (the same within a warp for down/up/xor); "
                                                     "only their low 5 bits count"})


def atomic_kernel(t: str, returns_old: bool) -> GpuCase:
    """acc[idx[i]] += x[i] for every i (red, or atom keeping old values whose
    sum is checked: atomics' order is the hardware's)."""
    P = f"!tgpu.ptr<{t}, global>"
    Q = "!tgpu.ptr<i32, global>"
    body = f"""      %tid0 = "gpu.thread_id"() <{{dimension = #gpu<dim x>}}> : () -> index
      %bid0 = "gpu.block_id"() <{{dimension = #gpu<dim x>}}> : () -> index
      %bdim0 = "gpu.block_dim"() <{{dimension = #gpu<dim x>}}> : () -> index
      %g0 = arith.muli %bid0, %bdim0 : index
      %g1 = arith.addi %g0, %tid0 : index
      %i = arith.index_cast %g1 : index to i64
      %ok = arith.cmpi slt, %i, %n : i64
      scf.if %ok {{
        %v = tgpu.load %x[%i] : {P}, i64
        %j = tgpu.load %idx[%i] : {Q}, i64
        {"%old = " if returns_old else ""}tgpu.atomic add %acc[%j], %v : {P}, i32{f" -> {t}" if returns_old else ""}
        {f"tgpu.store %old, %olds[%i] : {P}, i64" if returns_old else ""}
      }}
"""
    name = f"atomic_{t}{'_old' if returns_old else ''}"
    params = [("%x", P), ("%idx", Q), ("%acc", P), ("%olds", P), ("%n", "i64")]
    text = _wrap(_func(name, params, (128, 1, 1), body))

    def ref(x, idx):
        acc = np.zeros(8, x.dtype)
        np.add.at(acc, idx, x)
        return [acc]

    return GpuCase(name, text, (128, 1, 1), lambda x, idx: (max(1, -(-x.size // 128)), 1, 1),
                   lambda x, idx: [x, idx, np.zeros(8, x.dtype), np.zeros_like(x), np.int64(x.size)], (2, 3),
                   lambda x, idx: ref(x, idx) + [None],
                   notes={"values": "integers (exact in f32 in any order)", "olds": "a permutation of partial sums"})


def scale_kernel(t: str) -> GpuCase:
    """out[i] = in[i] * s with a scalar ``t`` parameter (ld.param of floats)."""
    P = f"!tgpu.ptr<{t}, global>"
    body = f"""      %tid0 = "gpu.thread_id"() <{{dimension = #gpu<dim x>}}> : () -> index
      %i = arith.index_cast %tid0 : index to i32
      %ok = arith.cmpi slt, %i, %n : i32
      scf.if %ok {{
        %v = tgpu.load %in[%i] : {P}, i32
        %r = arith.mulf %v, %s : {t}
        tgpu.store %r, %out[%i] : {P}, i32
      }}
"""
    name = f"scale_{t}"
    text = _wrap(_func(name, [("%in", P), ("%s", t), ("%out", P), ("%n", "i32")], (256, 1, 1), body))
    return GpuCase(name, text, (256, 1, 1), lambda x, s: (1, 1, 1),
                   lambda x, s: [x, _NP[t](s), np.zeros_like(x), np.int32(x.size)], (2,),
                   lambda x, s: [x * _NP[t](s)])


def mma_kernel() -> GpuCase:
    """One warp's tensor-core product C = A B of a 16x16 and a 16x8 float16
    matrix (row-major buffers) into float32, each lane loading its fragment
    elements where PTX's "Matrix Fragments for mma.m16n8k16 with floating
    point type" puts them (g = lane / 4, t = lane % 4)."""
    PH, PF = "!tgpu.ptr<f16, global>", "!tgpu.ptr<f32, global>"
    lines = ['      %tid0 = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index',
             "      %l = arith.index_cast %tid0 : index to i32",
             "      %c4 = arith.constant 4 : i32", "      %c2 = arith.constant 2 : i32",
             "      %c8 = arith.constant 8 : i32", "      %c16 = arith.constant 16 : i32",
             "      %g = arith.divui %l, %c4 : i32", "      %tq = arith.remui %l, %c4 : i32",
             "      %t2 = arith.muli %tq, %c2 : i32", "      %z = arith.constant 0.0 : f32"]
    consts = set()

    def const(v):
        if v not in consts:
            consts.add(v)
            lines.append(f"      %k{v} = arith.constant {v} : i32")
        return f"%k{v}"

    def element(name, row_base, row_off, col_base, col_off, width, ptr, ptr_t, load=True):
        lines.append(f"      %{name}_r = arith.addi {row_base}, {const(row_off)} : i32")
        lines.append(f"      %{name}_c = arith.addi {col_base}, {const(col_off)} : i32")
        lines.append(f"      %{name}_m = arith.muli %{name}_r, {const(width)} : i32")
        lines.append(f"      %{name}_i = arith.addi %{name}_m, %{name}_c : i32")
        if load:
            lines.append(f"      %{name} = tgpu.load {ptr}[%{name}_i] : {ptr_t}, i32")

    for i in range(8):  # a_i: row g + 8((i >> 1) & 1), column 2t + (i & 1) + 8(i >> 2)
        element(f"a{i}", "%g", 8 * ((i >> 1) & 1), "%t2", (i & 1) + 8 * (i >> 2), 16, "%A", PH)
    for i in range(4):  # b_i: row 2t + (i & 1) + 8(i >> 1), column g
        element(f"b{i}", "%t2", (i & 1) + 8 * (i >> 1), "%g", 0, 8, "%B", PH)
    a = ", ".join(f"%a{i}" for i in range(8))
    b = ", ".join(f"%b{i}" for i in range(4))
    lines.append(f"      %d0, %d1, %d2, %d3 = tgpu.mma m16n8k16 a({a}) b({b}) c(%z, %z, %z, %z) : f16 -> f32")
    for i in range(4):  # d_i: row g + 8(i >> 1), column 2t + (i & 1)
        element(f"s{i}", "%g", 8 * (i >> 1), "%t2", i & 1, 8, None, None, load=False)
        lines.append(f"      tgpu.store %d{i}, %C[%s{i}_i] : {PF}, i32")
    text = _wrap(_func("mma_m16n8k16", [("%A", PH), ("%B", PH), ("%C", PF)], (32, 1, 1), "\n".join(lines) + "\n"))
    return GpuCase("mma_m16n8k16", text, (32, 1, 1), lambda a, b: (1, 1, 1),
                   lambda a, b: [a, b, np.zeros((16, 8), np.float32)], (2,),
                   lambda a, b: [(a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)],
                   budget_registers=128, notes={"tolerance": "float32 accumulation of 16 exact products"})


def _built_case(kb, block, args, outputs, reference, **kw):
    """A GpuCase of a kernel made with tfc's KernelBuilder (its L4 printed as the case's text)."""
    from xdsl.dialects import gpu
    from xdsl.dialects.builtin import ModuleOp, StringAttr
    from xdsl.ir import Block, Region

    from tfc.dialects.tensor import print_ir

    name = kb.func.sym_name.data
    text = print_ir(ModuleOp([gpu.ModuleOp(StringAttr("kernels"), Region(Block([kb.finish()])))]))
    return GpuCase(name, text, block, lambda *ins: (1, 1, 1), args, outputs, reference, **kw)


def ldmatrix_kernel(num: int, trans: bool) -> GpuCase:
    """One warp: x (num * 64 float16) copied to shared memory, then ``tgpu.ldmatrix x{num}``
    with row r of matrix j at shared row 8 j + 7 - r (rows reversed: the rows come from the
    addresses the lanes give); lane l stores its 2 num values to out[2 num l ...]. numpy's
    answer from the PTX ISA's ldmatrix layout (lane l: row l / 4, columns 2 (l % 4), + 1 of
    each matrix; transposed: rows 2 (l % 4), + 1 of column l / 4)."""
    from xdsl.dialects import gpu as xgpu
    from xdsl.dialects.builtin import Float16Type, i32

    from tfc.dialects import gpu as G
    from tfc.passes.gpu_builder import KernelBuilder

    f16 = Float16Type()
    kb = KernelBuilder(f"ldmatrix_x{num}" + ("_trans" if trans else ""), [G.PtrType(f16, "global")] * 2, "copy",
                       i32, (32, 1, 1))
    px, po = kb.args
    lane = kb.tid()
    sm = kb.shared(f16, 64 * num)
    for e in range(2 * num):
        at = kb.add(lane, kb.i(32 * e))
        kb.store(kb.load(px, at), sm, at)
    kb.emit(xgpu.BarrierOp())
    mine = kb.remu(lane, kb.i(8 * num))  # lanes past 8 num give a valid row too (not read)
    j, r = kb.divu(mine, kb.i(8)), kb.remu(mine, kb.i(8))
    row = kb.sub(kb.add(kb.mul(j, kb.i(8)), kb.i(7)), r)
    vals = kb.emit(G.LdMatrixOp(sm, kb.mul(row, kb.i(8)), num, trans)).results
    for e, v in enumerate(vals):
        kb.store([v], po, kb.add(kb.mul(lane, kb.i(2 * num)), kb.i(e)))

    def reference(x):
        m = x.reshape(num, 8, 8)[:, ::-1]
        out = np.zeros((32, 2 * num), np.float16)
        for ln in range(32):
            g, t = ln // 4, ln % 4
            for jj in range(num):
                for h in (0, 1):
                    out[ln, 2 * jj + h] = m[jj, 2 * t + h, g] if trans else m[jj, g, 2 * t + h]
        return [out.ravel()]
    return _built_case(kb, (32, 1, 1), lambda x: [x, np.zeros(64 * num, np.float16)], (1,), reference,
                       budget_shared=1024)


def mma_s8_kernel() -> GpuCase:
    """One warp: ``tgpu.mma m16n8k32`` (int8, int32 accumulation) of per-lane registers
    a (4 words), b (2 words), c (4) read from the inputs, d stored per lane; numpy's answer
    from the PTX ISA's "Matrix Fragments for mma.m16n8k32" table, int32 wrapping."""
    from xdsl.dialects.builtin import i32

    from tfc.dialects import gpu as G
    from tfc.passes.gpu_builder import KernelBuilder

    kb = KernelBuilder("mma_m16n8k32_s8", [G.PtrType(i32, "global")] * 4, "matmul", i32, (32, 1, 1))
    pa, pb, pc, pd = kb.args
    lane = kb.tid()

    def regs(ptr, n):
        return [kb.load(ptr, kb.add(kb.mul(lane, kb.i(n)), kb.i(e)))[0] for e in range(n)]
    for e, v in enumerate(kb.emit(G.MmaOp(regs(pa, 4), regs(pb, 2), regs(pc, 4))).results):
        kb.store([v], pd, kb.add(kb.mul(lane, kb.i(4)), kb.i(e)))

    def reference(a, b, c):
        ab, bb = a.view(np.int8).reshape(32, 4, 4), b.view(np.int8).reshape(32, 2, 4)
        A, B, C = np.zeros((16, 32), np.int64), np.zeros((32, 8), np.int64), np.zeros((16, 8), np.int64)
        for ln in range(32):
            g, t = ln // 4, ln % 4
            for e in range(4):
                A[g + 8 * (e & 1), 4 * t + 16 * (e >> 1):4 * t + 16 * (e >> 1) + 4] = ab[ln, e]
                C[g + 8 * (e >> 1), 2 * t + (e & 1)] = c[4 * ln + e]
            for e in range(2):
                B[4 * t + 16 * e:4 * t + 16 * e + 4, g] = bb[ln, e]
        D = (A @ B + C).astype(np.int32)
        return [np.array([D[ln // 4 + 8 * (e >> 1), 2 * (ln % 4) + (e & 1)] for ln in range(32) for e in range(4)],
                         np.int32)]
    return _built_case(kb, (32, 1, 1), lambda a, b, c: [a, b, c, np.zeros(128, np.int32)], (3,), reference,
                       budget_registers=64)


def cp_async_kernel() -> GpuCase:
    """One warp: lane l copies 16 bytes (8 float16) of x from element 8 l into shared memory with
    ``tgpu.cp_async``, reading only the first 2 (l % 9) bytes (the rest zero: lanes 8, 17, 26 copy
    all 16, lane 0 none), waits, a barrier, then lane l stores the 8 values lane 31 - l copied."""
    from xdsl.dialects import gpu as xgpu
    from xdsl.dialects.builtin import Float16Type, i32

    from tfc.dialects import gpu as G
    from tfc.passes.gpu_builder import KernelBuilder

    f16 = Float16Type()
    kb = KernelBuilder("cp_async_f16", [G.PtrType(f16, "global")] * 2, "copy", i32, (32, 1, 1))
    px, po = kb.args
    lane = kb.tid()
    sm = kb.shared(f16, 256)
    at = kb.mul(lane, kb.i(8))
    kb.emit(G.CpAsyncOp(sm, at, px, at, kb.mul(kb.remu(lane, kb.i(9)), kb.i(2))))
    kb.emit(G.CpAsyncWaitOp())
    kb.emit(xgpu.BarrierOp())
    other = kb.mul(kb.sub(kb.i(31), lane), kb.i(8))
    for e in range(8):
        kb.store(kb.load(sm, kb.add(other, kb.i(e))), po, kb.add(at, kb.i(e)))

    def reference(x):
        rows = x.reshape(32, 8).copy()
        for ln in range(32):
            rows[ln, min(ln % 9, 8):] = 0
        return [rows[::-1].ravel()]
    return _built_case(kb, (32, 1, 1), lambda x: [x, np.zeros(256, np.float16)], (1,), reference)


def tensor_core_kernels():
    return ([mma_kernel(), mma_s8_kernel()] + [ldmatrix_kernel(n, t) for n in (1, 2, 4) for t in (False, True)]
            + [cp_async_kernel()])


def misc_kernels():
    return ([*copy_kernels()] + [shuffle_kernel(m, t) for m in ("down", "up", "xor", "idx") for t in ("f32", "i32")]
            + [atomic_kernel(t, o) for t in ("f32", "f64", "i32", "i64") for o in (False, True)]
            + [scale_kernel(t) for t in ("f32", "f64")] + tensor_core_kernels())
