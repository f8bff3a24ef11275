"""tfc-lower-gpu (L3 -> L4, issue #17 point 2): small tfc functions through the
real pipeline to L3, lowered to L4, printed as PTX and every launch run in
order through the PTX simulator; each result against the numpy backend on
random inputs (odd sizes, sizes not multiples of the block, zero sizes,
broadcasts, strided views, every reduce kind and axis set, matmul with both
transpose flags), within the CUDA backend's numerics contract. Tests marked
gpu launch representative lowerings on a real GPU through tfc's Driver (the
same host, ``DriverHost``); with TFC_CUDA_DRIVER=simulator they run on the
simulated driver."""
from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, MemRefType

import tfc
from tfc.backends.vectorized import IMPLS
from tfc.dialects import loops as L
from tfc.dialects.gpu import LaunchOp
from tfc.dialects.tensor import dtype_of, numpy_from_dense, parse_module, print_ir
from tfc.passes.lower_gpu import BLOCK, MAX_BLOCKS

ptx_mod = pytest.importorskip("tfc.backends.cuda.ptx", reason="the PTX printer (G1) has not landed")
sim = pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator (G3) has not landed")

F32 = np.float32


# -- a host for straight-line L4 functions (and loops.if), over the simulator -----------------


def _np(t):
    return np.dtype(dtype_of(t).as_numpy_dtype)


def _nbytes(t):
    return int(np.prod(t.get_shape(), dtype=np.int64)) * _np(t.element_type).itemsize


_PARAM = {"i1": np.int32, "i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64,
          "index": np.int64}


class Host:
    """Runs the host function of an L4 module: every buffer a simulator
    allocation, a memref value its data address (view offset included, as
    kernels get it), each tgpu.launch a simulator run."""

    def __init__(self, module):
        self.module = module
        self.program = sim.parse(ptx_mod.to_ptx(module)) if kernels(module) else None
        self.mem = sim.Memory()
        self.launches = []

    # memory and launches: the simulator's (DriverHost: a real GPU's)
    def alloc(self, nbytes):
        return self.mem.alloc(nbytes)

    def upload(self, array):
        return self.mem.to_device(array)

    def read(self, addr, dtype, shape):
        return self.mem.to_numpy(addr, dtype, shape).copy()

    def run_kernel(self, name, grid, block, args):
        sim.run(self.program, name, grid, block, args, self.mem)

    def run(self, args):
        (f,) = [op for op in self.module.ops if isinstance(op, func.FuncOp)]
        env = {}
        block_args = list(f.body.block.args)
        for a, x in zip(block_args[:-1], args):
            env[a] = self.upload(np.ascontiguousarray(x)) if isinstance(a.type, MemRefType) else x
        arena = block_args[-1]
        env[arena] = self.alloc(arena.type.get_shape()[0])
        return self.block(f.body.block, env)

    def block(self, block, env):
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                return [self.fetch(v, env) for v in op.operands]
            if isinstance(op, L.YieldOp):
                return [env[v] for v in op.values]
            self.op(op, env)
        return []

    def fetch(self, v, env):
        if isinstance(v.type, MemRefType):
            t = v.type
            assert L.is_contiguous(t)
            return self.read(env[v], _np(t.element_type), tuple(t.get_shape()))
        return env[v]

    def op(self, op, env):
        if isinstance(op, L.ViewOp):
            env[op.result] = env[op.arena] + op.offset.value.data
        elif isinstance(op, L.AllocOp):
            env[op.result] = self.alloc(_nbytes(op.result.type))
        elif isinstance(op, L.ConstantOp):
            env[op.result] = self.upload(np.ascontiguousarray(numpy_from_dense(op.value)))
        elif isinstance(op, (L.SubviewOp, L.TransposeViewOp)):
            size = _np(op.result.type.element_type).itemsize
            delta = L.layout_of(op.result.type)[1] - L.layout_of(op.source.type)[1]
            if 0 in op.result.type.get_shape():
                delta = 0
            env[op.result] = env[op.source] + delta * size
        elif isinstance(op, L.ReshapeOp):
            env[op.result] = env[op.source]
        elif isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType):
            env[op.result] = op.value.value.data
        elif op.name.startswith(("arith.", "math.")) or op.name in ("tfc.floormod", "tfc.remf"):
            # host scalar code, as the vectorized interpreter runs it
            out = IMPLS[op.name](op, [np.asarray(env[v]) for v in op.operands])
            env[op.results[0]] = np.asarray(out).astype(_np(op.results[0].type))[()]
        elif isinstance(op, L.WhileOp):
            vals = [env[v] for v in op.inits]
            while True:
                cond = op.cond_region.block
                e = dict(env) | dict(zip(cond.args, vals))
                for o in cond.ops:
                    if isinstance(o, L.ConditionOp):
                        go = bool(e[o.cond])
                        break
                    self.op(o, e)
                if not go:
                    break
                body = op.body_region.block
                vals = self.block(body, dict(env) | dict(zip(body.args, vals)))
            for r, v in zip(op.results, vals):
                env[r] = v
        elif isinstance(op, LaunchOp):
            grid = [int(env[g]) for g in op.grid]
            args = []
            for a in op.args:
                if isinstance(a.type, MemRefType):
                    args.append(np.uint64(env[a]))
                else:
                    args.append(_PARAM[str(a.type)](env[a]))
            name = op.kernel.root_reference.data
            self.launches.append(name)
            self.run_kernel(name, grid, op.block_size, args)
        elif isinstance(op, L.LoadOp):
            t = op.source.type
            env[op.result] = self.read(env[op.source], _np(t.element_type), ())[()]
        elif isinstance(op, L.IfOp):
            branch = op.then_region.block if bool(env[op.cond]) else op.else_region.block
            for r, v in zip(op.results, self.block(branch, dict(env) | env)):
                env[r] = v
        elif isinstance(op, L.LibraryOp):  # on host scalars only (tfc-lower-gpu launches the others)
            from tfc.core.registry import REGISTRY
            from tfc.dialects.tensor import decode_attrs

            opdef = REGISTRY[op.callee.data]
            out = opdef.kernel(*[np.asarray(env[v]) for v in op.ins], **decode_attrs(opdef, dict(op.kernel_attrs.data)))
            for r, v in zip(op.res, out if isinstance(out, (tuple, list)) else [out]):
                env[r] = np.asarray(v).astype(_np(r.type))[()]
        elif isinstance(op, L.RaiseOp):
            raise RuntimeError(f"loops.raise {op.callee.data}")
        else:
            raise NotImplementedError(f"the test host cannot run {op.name}")


class DriverHost(Host):
    """The same host on a real GPU, through tfc's Driver (pycuda or
    cuda-bindings): the PTX the driver JIT-compiles, real launches."""

    def __init__(self, module, driver):
        self.module, self.drv, self.launches, self.bufs = module, driver, [], []
        self.program = driver.load_module(ptx_mod.to_ptx(module)) if kernels(module) else None

    def alloc(self, nbytes):
        ptr = self.drv.alloc(max(int(nbytes), 1))
        self.bufs.append(ptr)
        return ptr

    def upload(self, array):
        ptr = self.alloc(array.nbytes)
        if array.nbytes:
            self.drv.copy_htod(ptr, array)
        return ptr

    def read(self, addr, dtype, shape):
        out = np.empty(shape, dtype)
        if out.nbytes:
            self.drv.copy_dtoh(out, addr)
        return out

    def run_kernel(self, name, grid, block, args):
        self.drv.launch(self.drv.function(self.program, name), tuple(grid), tuple(block), args)

    def close(self):
        self.drv.synchronize()
        for p in self.bufs:
            self.drv.free(p)


def l3_of(fn, *args):
    return fn if isinstance(fn, str) else tfc.function(fn).get_concrete_function(*args).ir("loops")


def lower(text):
    from tfc.dialects.tensor import context, verify_dominance
    from tfc.passes.lower_gpu import LowerGpuPass

    m = parse_module(text)
    LowerGpuPass().apply(context(), m)
    m.verify()
    verify_dominance(m)
    return m


def check(fn, *args, family=None, launches=None, driver=None):
    """``fn`` compiled to L4 and run on the simulator (with ``driver``: on
    that GPU) equals the numpy backend's result within the CUDA contract;
    returns the L4 module."""
    from helpers import assert_meets_contract

    want = tfc.function(fn)(*args)
    want = [np.asarray(w) for w in (want if isinstance(want, (list, tuple)) else [want])]
    m = lower(l3_of(fn, *args))
    host = Host(m) if driver is None else DriverHost(m, driver)
    try:
        got = host.run(list(args))
    finally:
        if driver is not None:
            host.close()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g, dtype=w.dtype).reshape(w.shape)
        assert_meets_contract(g, w, family, target="cuda")
    if launches is not None:
        assert len(host.launches) == launches, host.launches
    check_budgets(m)
    return m


# docs/gpu.md's budgets per kernel kind: (registers, shared bytes); a copy's shared memory
# is the tiled transpose's 32 x 33 tile (4.1 KiB of float32, 8.3 KiB of float64)
BUDGETS = {"elementwise": (64, 0), "copy": (64, 9 * 1024), "reduction": (64, 1024), "matmul": (128, 48 * 1024)}


def check_budgets(m):
    """Every kernel assembles with ptxas for sm_80 and sm_90 (-Werror, spills
    are errors) within its kind's budgets (where ptxas is installed; the
    test_ptxas_* tests say when it is not)."""
    from tfc.backends.cuda import ptxas

    ks = kernels(m)
    if not ks or not ptxas.available():
        return
    kinds = {k.sym_name.data: k.attributes["tgpu.kind"].data for k in ks}
    text = ptx_mod.to_ptx(m)
    for arch in ("sm_80", "sm_90"):
        for name, res in ptxas.assemble(text, arch).items():
            regs, smem = BUDGETS[kinds[name]]
            assert res.spills == 0, (arch, res)
            assert res.registers <= regs, (arch, res)
            assert res.shared_bytes <= smem, (arch, res)


def kernels(m):
    from xdsl.dialects import gpu

    (mod,) = [op for op in m.ops if isinstance(op, gpu.ModuleOp)]
    return list(mod.body.block.ops)


@pytest.fixture
def rng():
    return np.random.default_rng(17)


# -- elementwise ----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 7), (1001,), (3, 1, 4), (257,), (1,)])
def test_elementwise_broadcast(rng, shape):
    x = rng.normal(size=shape).astype(F32)
    b = rng.normal(size=shape[-1:]).astype(F32)
    check(lambda x, b: tfc.tanh(x) * 2.0 + b, x, b, family="elementwise")


@pytest.mark.parametrize("n", [1, 4, 1001, 4 * BLOCK + 3])
def test_contiguous_vector_path(rng, n):
    x = rng.normal(size=(n,)).astype(F32)

    def f(x):
        u = x * 2.0  # an allocated buffer (u is returned), read by the next kernel
        return u, u * tfc.reduce_sum(u) + u
    m = check(f, x, family="reduction")
    first, last = kernels(m)[0], kernels(m)[-1]
    # an allocated (or planned) contiguous buffer: 16-byte vectors and a scalar tail
    assert first.attributes["tgpu.kind"].data == "reduction"
    assert last.attributes["tgpu.width"].value.data == (4 if n >= 4 else 1)
    assert last.attributes["tgpu.kind"].data == "elementwise"
    assert "arith.divui" not in print_ir(last) and "arith.remui" not in print_ir(last)  # the flat index


def test_float64_vector_width_2(rng):
    x = rng.normal(size=(37,))

    def f(x):
        u = x * x - 1.0
        return u, u * tfc.reduce_max(u)
    m = check(f, x)
    assert kernels(m)[-1].attributes["tgpu.width"].value.data == 2


def test_zero_size_launches_nothing(rng):
    x = np.zeros((0, 4), F32)
    m = check(lambda x: x + 1.0, x, launches=0)
    assert kernels(m) == []


def test_strided_views(rng):
    x = rng.normal(size=(6, 9)).astype(F32)
    check(lambda x: tfc.transpose(x)[1:, ::2] + 1.0, x)
    check(lambda x: x[::-1, 2:7] * 3.0, x)


@pytest.mark.parametrize("shape", [(70, 45), (3, 33, 100), (64, 64), (16, 200)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.bool_])
def test_tiled_transpose(rng, shape, dtype):
    x = rng.normal(size=shape).astype(dtype)
    perm = list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2]
    m = check(lambda x: tfc.transpose(x, perm), x)
    (k,) = kernels(m)
    assert k.sym_name.data == "k0_transpose"  # 32x32 tiles through shared memory, both sides coalesced
    assert k.attributes["gpu.known_block_size"].get_values() == (32, 8, 1)


def test_grid_is_capped():
    n = MAX_BLOCKS * BLOCK * 4 + 5
    text = f"""
func.func @f(%x: memref<{n}xf32>, %arena: memref<0xi8>) -> memref<{n}xf32> {{
  %0 = loops.alloc : memref<{n}xf32>
  loops.parallel ins(%x : memref<{n}xf32>) outs(%0 : memref<{n}xf32>) attributes {{shape = array<i64: {n}>, broadcast = [array<i64: 0>]}} {{
  ^bb0(%a: f32):
    %b = arith.addf %a, %a : f32
    loops.yield %b : f32
  }}
  func.return %0 : memref<{n}xf32>
}}"""
    m = lower(text)
    (launch,) = [op for op in m.walk() if isinstance(op, LaunchOp)]
    assert launch.gx.owner.value.value.data == MAX_BLOCKS


# CUDA's grid limits: gridDim.x up to 2^31 - 1 blocks, y and z up to 65535
GRID_LIMITS = ((1 << 31) - 1, 65535, 65535)


def _huge_cases():
    import tfc.ops.scatter as SC

    S = tfc.TensorSpec
    big = 1 << 22
    return {
        "matmul_rows": (lambda a, b: tfc.matmul(a, b), [S([1048577, 1]), S([1, 1])]),
        "matmul_cols": (lambda a, b: tfc.matmul(a, b), [S([1, 1]), S([1, 1048577])]),
        "matmul_blocked_rows": (lambda a, b: tfc.matmul(a, b), [S([8388737, 64]), S([64, 64])]),
        "matmul_batch": (lambda a, b: tfc.matmul(a, b), [S([70000, 2, 3]), S([70000, 3, 2])]),
        "matmul_batch_broadcast": (lambda a, b: tfc.matmul(a, b), [S([3, 70001, 2, 3]), S([3, 2])]),
        "elementwise": (lambda x, b: tfc.tanh(x) * b, [S([big, 33]), S([33])]),
        "strided": (lambda x: x[::2, 1:] * 2.0, [S([big, 9])]),
        "sum_all": (lambda x: tfc.reduce_sum(x), [S([big, 64])]),
        "sum_rows": (lambda x: tfc.reduce_sum(x, axis=1), [S([big * 4, 3])]),
        "max_cols": (lambda x: tfc.reduce_max(x, axis=0), [S([3, big * 4])]),
        "argmax": (lambda x: tfc.argmax(x, axis=1), [S([big, 5])]),
        "softmax": (lambda x: tfc.nn.softmax(x), [S([big, 40])]),
        "transpose": (lambda x: tfc.transpose(x, [0, 2, 1]), [S([70000, 33, 40])]),
        "scatter_add": (lambda x, i: SC.unsorted_segment_sum(x, i, 70000), [S([big, 3]), S([big], tfc.int32)]),
        "gather": (lambda x, i: tfc.gather(x, i), [S([big, 3]), S([big], tfc.int32)]),
    }


@pytest.mark.parametrize("case", sorted(_huge_cases()))
def test_grids_within_cuda_limits(case):
    """Every launch of huge shapes fits CUDA's grid (lowering only: nothing runs)."""
    fn, specs = _huge_cases()[case]
    m = lower(tfc.function(fn).get_concrete_function(*specs).ir("loops"))
    launches = [op for op in m.walk() if isinstance(op, LaunchOp)]
    assert launches
    for op in launches:
        grid = [g.owner.value.value.data for g in op.grid]
        assert all(1 <= g <= lim for g, lim in zip(grid, GRID_LIMITS)), (op.kernel, grid)


def test_matmul_of_more_tiles_than_a_grid_raises():
    S = tfc.TensorSpec
    l3 = tfc.function(lambda a, b: tfc.matmul(a, b)).get_concrete_function(S([1 << 23, 1]), S([1, (1 << 22) + 128]))
    with pytest.raises(NotImplementedError, match="matmul of 2147549184 tiles of 128x128"):
        lower(l3.ir("loops"))


def test_matmul_grid_is_one_dimensional(rng):
    """Tiles of every batch on gridDim.x, their digits from blockIdx.x (both kernels, batches broadcast)."""
    a = rng.normal(size=(3, 1, 70, 9)).astype(F32)
    b = rng.normal(size=(2, 9, 33)).astype(F32)
    for x, y in ((a, b), (a[..., :40, :], b[..., :1])):
        m = check(lambda a, b: tfc.matmul(a, b), np.ascontiguousarray(x), np.ascontiguousarray(y), family="matmul")
        (op,) = [o for o in m.walk() if isinstance(o, LaunchOp)]
        grid = [g.owner.value.value.data for g in op.grid]
        assert grid[1:] == [1, 1] and grid[0] > 6


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_integer_division_semantics(dtype):
    a = np.array([7, -7, 7, -7, 5, 0, -128 if dtype == np.int8 else -(2 ** 31), 3, -3], dtype)
    b = np.array([2, 2, -2, -2, 0, 0, -1, 7, 7], dtype)
    check(lambda a, b: (a // b, a % b), a, b)


def _float_division_operands(dtype, rng):
    fi = np.finfo(dtype)
    special = [0.0, -0.0, 1.0, -1.0, 1.5, -3.0, 7.0, 0.1, -1e-3, np.inf, -np.inf, np.nan, fi.max, -fi.max,
               fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, fi.tiny * 3.5, fi.eps]
    rand = rng.standard_normal(13) * 10.0 ** rng.integers(-4, 5, 13)
    v = np.concatenate([np.array(special), rand]).astype(dtype)
    return np.repeat(v, len(v)), np.tile(v, len(v))  # every pair (x, y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_mod_and_floordiv_are_numpys(rng, dtype):
    """tfc.remf (C fmod, exact) and numpy's % and // built on it: bit for bit
    numpy's on every pair of special values (signed zeros, infinities, NaN,
    subnormals, the extremes: up to 2098 quotient bits) and random ones."""
    x, y = _float_division_operands(dtype, rng)
    fn = lambda a, b: (a % b, a // b)  # noqa: E731
    want = [np.asarray(w) for w in tfc.function(fn)(x, y)]
    assert np.array_equal(want[0], np.mod(x, y), equal_nan=True)
    m = lower(l3_of(fn, x, y))
    got = Host(m).run([x, y])
    for g, w in zip(got, want):
        g = np.asarray(g).reshape(w.shape)
        nan = np.isnan(w)
        assert np.array_equal(np.isnan(g), nan)
        assert np.array_equal(g[~nan].view(np.uint8), w[~nan].view(np.uint8)), (x[~nan][g[~nan] != w[~nan]], y[~nan][g[~nan] != w[~nan]])
    check_budgets(m)


def test_float_to_int_casts():
    x = np.array([1.5, -1.5, np.nan, np.inf, -np.inf, 3e9, -3e9, 0.0, -0.7], F32)
    check(lambda x: (tfc.cast(x, tfc.int32), tfc.cast(x, tfc.int64)), x)


def test_bool_and_compare(rng):
    x = rng.normal(size=(9, 5)).astype(F32)
    y = rng.normal(size=(9, 5)).astype(F32)
    check(lambda x, y: tfc.logical_and(x > y, y > 0.0), x, y)


def test_float16_arithmetic(rng):
    x = rng.normal(size=(13,)).astype(np.float16)
    y = rng.normal(size=(13,)).astype(np.float16)
    check(lambda x, y: x * y + x / y, x, y)


# -- reductions -------------------------------------------------------------------------------


@pytest.mark.parametrize("axes", [[0], [1], [2], [0, 2], [1, 2], [0, 1, 2], None])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod", "mean"])
def test_reduce_kinds_and_axes(rng, kind, axes):
    x = rng.uniform(0.5, 1.5, size=(3, 5, 7)).astype(F32)
    op = getattr(tfc, f"reduce_{kind}")
    check(lambda x: op(x, axis=axes), x, family="reduction")


@pytest.mark.parametrize("kind", ["any", "all"])
def test_reduce_bool(rng, kind):
    x = rng.normal(size=(4, 33)) > 0.8
    op = getattr(tfc, f"reduce_{kind}")
    check(lambda x: (op(x, axis=[1]), op(x, axis=[0]), op(x)), x)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.float64])
def test_reduce_integer_and_wide(rng, dtype):
    x = rng.integers(-100, 100, size=(6, 300)).astype(dtype)
    check(lambda x: (tfc.reduce_sum(x, axis=[1]), tfc.reduce_max(x, axis=[0]), tfc.reduce_mean(x, axis=[1]),
                     tfc.reduce_min(x)), x, family="reduction")


@pytest.mark.parametrize("kind", ["sum", "max", "argmin", "any"])
def test_one_warp_per_output(rng, kind):
    x = rng.normal(size=(MAX_BLOCKS + 37, 33)).astype(F32)  # many outputs of few elements
    if kind == "any":
        x = x > 1.0
        fn = lambda x: tfc.reduce_any(x, axis=[1])  # noqa: E731
    elif kind == "argmin":
        fn = lambda x: tfc.argmin(x, axis=1)  # noqa: E731
    else:
        fn = lambda x: getattr(tfc, f"reduce_{kind}")(x * 2.0, axis=[1])  # noqa: E731
    m = check(fn, x, family="reduction")
    (k,) = kernels(m)
    assert k.sym_name.data.endswith("_warps") and "gpu.barrier" not in print_ir(k) and "tgpu.shared" not in print_ir(k)


@pytest.mark.parametrize("n", [40000, 1001])
def test_float32_products_accumulate_in_float64(n):
    """float32 products near 1 carry a rounding bias that grows with the count
    (40,000 values in [0.999, 1.001]: 3.7e-5 from numpy in float32): float64
    accumulators, within the reduction family's rtol of numpy's."""
    x = np.random.default_rng(1).uniform(0.999, 1.001, n).astype(F32)
    m = check(lambda x: tfc.reduce_prod(x), x, family="reduction")
    loops = [op for k in kernels(m) for op in k.walk() if isinstance(op, scf.ForOp)]
    assert loops and all(str(r.type) == "f64" for op in loops for r in op.results)  # the carried accumulators


def test_row_sums_near_zero_within_length_aware_contract(rng):
    """Sums that cancel to near zero differ from numpy's by about eps per
    summed value (both orders round): the contract's atol scales with the
    reduced length (Numerics.difference(..., reduced=))."""
    from tfc.backends import backend

    x = rng.standard_normal((4000, 100)).astype(F32)
    fn = lambda x: tfc.reduce_sum(x, axis=1)  # noqa: E731
    want = np.asarray(tfc.function(fn)(x))
    got = np.asarray(Host(lower(l3_of(fn, x))).run([x])[0]).reshape(want.shape)
    numerics = backend("cuda").numerics
    assert numerics.difference(want, got, "reduction", reduced=100) is None
    exact = x.astype(np.float64).sum(1)
    assert np.abs(want - exact).max() > 1e-6  # numpy's own float32 error beyond the fixed atol


def test_reduce_nan_propagates():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], F32)
    check(lambda x: (tfc.reduce_max(x, axis=[1]), tfc.reduce_min(x, axis=[1]), tfc.reduce_sum(x, axis=[1])), x)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64, np.int8])
def test_argmax_argmin(rng, axis, dtype):
    x = rng.integers(-3, 3, size=(7, 300)).astype(dtype)  # many ties: the first index wins
    if dtype in (np.float32, np.float64):
        x[2, 5] = x[2, 40] = np.nan  # the first NaN wins
        x[4, :] = -np.inf
    check(lambda x: (tfc.argmax(x, axis=axis), tfc.argmin(x, axis=axis, output_type=tfc.int32)), x)


def test_reduce_empty_axis():
    x = np.zeros((3, 0), F32)
    check(lambda x: (tfc.reduce_sum(x, axis=[1]), tfc.reduce_max(x, axis=[1]), tfc.reduce_mean(x, axis=[1]),
                     tfc.reduce_prod(x, axis=[1])), x)


def test_two_pass_full_sum(rng):
    x = rng.normal(size=(1 << 15) + 3).astype(F32)
    m = check(lambda x: tfc.reduce_sum(x * 2.0), x, family="reduction", launches=2)
    names = [k.sym_name.data for k in kernels(m)]
    assert names[0].endswith("sum_all") and names[1].endswith("sum_all_final"), names
    assert any(isinstance(op, L.AllocOp) for op in m.walk())  # the partial results


def test_multi_output_kernel(rng):
    x = rng.normal(size=(4, 3)).astype(F32)
    w = rng.normal(size=(3, 3)).astype(F32)

    def f(x, w):
        e = tfc.tanh(tfc.exp(tfc.matmul(x, w)))
        return e * tfc.reduce_sum(e)
    check(f, x, w)


@pytest.mark.parametrize("shape", [(9, 37), (3, 4, 300), (1, 1)])
def test_softmax_is_one_row_kernel(rng, shape):
    x = rng.normal(size=shape).astype(F32)
    x.flat[0] = np.nan
    m = check(lambda x: tfc.nn.softmax(x), x, launches=1)
    (k,) = kernels(m)
    assert k.sym_name.data == "k0_rows_max_map_sum"
    # rows of a multiple of 4 of a planned buffer (a matmul's result): 16-byte vectors
    a = rng.normal(size=shape[:-1] + (5,)).astype(F32)
    b = rng.normal(size=(5, shape[-1])).astype(F32)
    m = check(lambda a, b: tfc.nn.softmax(tfc.matmul(a, b)), a, b)
    assert kernels(m)[-1].sym_name.data.endswith("rows_max_map_sum")
    assert ("width = 4" in print_ir(kernels(m)[-1])) == (shape[-1] % 4 == 0)


def test_row_groups_need_row_local_reads(rng):
    x = rng.normal(size=(9, 37)).astype(F32)
    # every row reads row 0's maximum: not one kernel (a block would read another block's row)
    check(lambda x: x - tfc.reduce_max(x, axis=[1], keepdims=True)[0:1], x, launches=2)

    def ln(x):
        mu = tfc.reduce_mean(x, axis=[-1], keepdims=True)
        v = tfc.reduce_mean((x - mu) * (x - mu), axis=[-1], keepdims=True)
        return (x - mu) / tfc.sqrt(v + 1e-5), tfc.reduce_sum(x, axis=[-1])
    check(ln, rng.normal(size=(3, 5, 300)).astype(F32), family="reduction")


# -- control flow on the host ----------------------------------------------------------


def test_while_and_if(rng):
    x = rng.normal(size=(37,)).astype(F32)

    def f(x, n):
        i = 0
        while i < n:
            x = x * 0.5 + tfc.tanh(x)
            i += 1
        if tfc.reduce_sum(x) > 0.0:
            x = x + 1.0
        else:
            x = x - 1.0
        return x, tfc.reduce_max(x)
    check(f, x, np.int32(5))
    check(f, -np.abs(x), np.int32(0))


# -- copies and computed loads ------------------------------------------------------------


def test_concat_and_gather(rng):
    a = rng.normal(size=(3, 5)).astype(F32)
    b = rng.normal(size=(2, 5)).astype(F32)
    check(lambda a, b: tfc.concat([a, b * 2.0], axis=0), a, b)
    idx = np.array([2, 0, 1, 2], np.int32)
    check(lambda a, i: tfc.gather(a, i), a, idx)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_add(rng, dtype):
    import tfc.ops.scatter as S

    x = rng.integers(-9, 9, size=(300, 3)).astype(dtype)
    ids = rng.integers(-1, 7, size=300).astype(np.int32)  # -1: dropped (the mask)
    m = check(lambda x, i: S.unsorted_segment_sum(x, i, 7), x, ids, family="reduction")
    assert any("scatter_add" in k.sym_name.data for k in kernels(m))


def test_scatter_add_float64_follows_the_dialect(rng):
    """Scatter-add into float64 (atom.global.add.f64, sm_60+) where the tgpu
    dialect and printer take it; until then a NotImplementedError naming f64."""
    import tfc.ops.scatter as S
    from xdsl.dialects.builtin import f64

    from tfc.passes.lower_gpu import atomic_add_supported

    x = rng.normal(size=(300, 3))
    ids = rng.integers(-1, 7, size=300).astype(np.int32)
    fn = lambda x, i: S.unsorted_segment_sum(x, i, 7)  # noqa: E731
    if atomic_add_supported(f64):
        check(fn, x, ids, family="reduction")
    else:
        with pytest.raises(NotImplementedError, match="loops.add_at into f64"):
            lower(l3_of(fn, x, ids))


@tfc.custom_gradient
def _cg_mul(a, b):
    def grad(dy):
        return dy * b, dy * a
    return a * b, grad


def test_custom_gradient_marker_copies(rng):
    """tfc.custom_gradient's marker (a library call returning copies of its
    outputs) becomes a device buffer and a copy kernel per result; the fuzz's
    program (a later kernel reusing a buffer a result still names), strided
    operands and float64."""
    x = rng.normal(size=(1, 7)).astype(F32)

    def prog(x1):
        v1 = tfc.squeeze(x1, axis=0)
        v3 = _cg_mul(v1, v1)
        return tfc.minimum(_cg_mul(v1, v3), x1), v3 * 2.0
    m = check(prog, x)
    assert any(k.attributes["tgpu.kind"].data == "copy" for k in kernels(m))
    y = rng.normal(size=(6, 4))
    check(lambda y: _cg_mul(tfc.transpose(y)[::2], tfc.transpose(y)[1::2]) + 1.0, y)


# -- matmul -------------------------------------------------------------------------------


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mkn", [(19, 23, 17), (70, 33, 130)])  # the 16x16 kernel, the register-blocked one
def test_matmul(rng, ta, tb, dtype, mkn):
    m_, k_, n_ = mkn
    a = rng.normal(size=(k_, m_) if ta else (m_, k_)).astype(dtype)
    b = rng.normal(size=(n_, k_) if tb else (k_, n_)).astype(dtype)
    m = check(lambda a, b: tfc.matmul(a, b, transpose_a=ta, transpose_b=tb), a, b, family="matmul")
    (k,) = kernels(m)
    assert k.attributes["tgpu.kind"].data == "matmul"
    assert k.sym_name.data.endswith(("128x128", "64x64")) == (m_ >= 64)


@pytest.mark.parametrize("shapes", [((3, 5, 7), (7, 4)), ((2, 1, 70, 9), (3, 9, 66)), ((70, 0), (0, 80))])
def test_batched_and_empty_matmul(rng, shapes):
    a = rng.normal(size=shapes[0]).astype(F32)
    b = rng.normal(size=shapes[1]).astype(F32)
    check(lambda a, b: tfc.matmul(a, b), a, b, family="matmul")


def test_ptxas_is_there():
    from tfc.backends.cuda import ptxas

    if not ptxas.available():
        pytest.skip("ptxas not found (PATH, /usr/local/cuda/bin, cuda.pathfinder): kernel budgets unchecked")
    x = np.ones((5, 7), F32)
    m = lower(l3_of(lambda x: (tfc.exp(x) * 2.0, tfc.reduce_sum(x, axis=[1])), x))
    check_budgets(m)


# -- what raises ----------------------------------------------------------------------------


def test_other_library_calls_raise():
    """A library call without a GPU kernel (here a conv2d missing an attribute
    its kernel needs; a random generator) raises at lowering time, naming it."""
    text = """
func.func @f(%x: memref<2x8x8x3xf32>, %w: memref<3x3x3x4xf32>, %arena: memref<0xi8>) -> memref<2x6x6x4xf32> {
  %0 = loops.alloc : memref<2x6x6x4xf32>
  loops.library "conv2d"(%x, %w : memref<2x8x8x3xf32>, memref<3x3x3x4xf32>) outs(%0 : memref<2x6x6x4xf32>) {attrs = {}} -> ()
  func.return %0 : memref<2x6x6x4xf32>
}"""
    with pytest.raises(NotImplementedError, match="target cuda: no GPU kernel for conv2d without its attribute"):
        lower(text)
    with pytest.raises(NotImplementedError, match="target cuda: no GPU kernel for shuffle_indices"):
        lower(text.replace('"conv2d"', '"shuffle_indices"'))
    with pytest.raises(NotImplementedError, match="target cuda: no GPU kernel for uniform without its attributes"):
        lower(text.replace('"conv2d"', '"uniform"'))


def test_tensor_ir_is_refused():
    text = """
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}"""
    with pytest.raises(ValueError, match="expects L3"):
        lower(text)


def test_narrow_scalar_arguments(rng):
    """float16 and int8 scalars (no PTX parameter type) travel widened, exactly:
    the host extends them, the kernel truncates back."""
    x = rng.normal(size=(37,)).astype(np.float16)
    m = check(lambda x, s: x * s + s, x, np.float16(-2.5))
    assert "arith.extf" in print_ir(m) and "arith.truncf" in print_ir(kernels(m)[0])
    for s in (np.int8(-128), np.int8(127)):
        k = rng.integers(-128, 128, size=(5, 3)).astype(np.int8)
        check(lambda k, s: (k * s, k + s, tfc.reduce_sum(k - s, axis=1)), k, s)
    check(lambda x, s: tfc.reduce_max(x * s), x, np.float16(65504.0))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_matmul(rng, dtype):
    a = rng.integers(-1000, 1000, size=(9, 70)).astype(dtype)
    b = rng.integers(-1000, 1000, size=(70, 11)).astype(dtype)
    check(lambda a, b: tfc.matmul(a, b), a, b)
    with pytest.raises(NotImplementedError, match="target cuda: no GPU kernel for matmul of i8"):
        lower(l3_of(lambda a, b: tfc.matmul(a, b), a.astype(np.int8), b.astype(np.int8)))


# -- random programs ----------------------------------------------------------------------


def test_random_programs(tmp_path):
    """The fuzz's random programs (tests/fuzz/programs.py; forward, static
    shapes) through L4 on the simulator against the numpy backend. A program
    using what has no GPU kernel yet (a NotImplementedError naming it, from
    the lowering or the printer) is counted, not compared; most must run."""
    import pathlib
    import sys

    from helpers import assert_meets_contract

    root = str(pathlib.Path(__file__).resolve().parent.parent)
    if root not in sys.path:  # tests.fuzz, as tests/test_fuzz.py imports it
        sys.path.insert(0, root)
    from tests.fuzz.programs import generate
    from tests.fuzz.run import _import

    ran, missing = 0, {}
    for index in range(16):
        p = generate(5, index)
        mod = _import(p.source(), str(tmp_path), p.name)
        g = tfc.function(mod.prog)
        try:
            want = [np.asarray(w) for w in g(*p.values)]
        except Exception:
            continue  # an invalid program (eager raises): nothing to compare
        try:
            m = lower(g.get_concrete_function(*p.values).ir("loops"))
            got = Host(m).run(list(p.values))
        except NotImplementedError as e:
            missing[p.name] = str(e)
            continue
        for a, b in zip(got, want):
            assert_meets_contract(np.asarray(a, dtype=b.dtype).reshape(b.shape), b, target="cuda")
        check_budgets(m)
        ran += 1
    assert ran >= 10, (ran, missing)


# -- on a real GPU (marked gpu: make gpu-check) ------------------------------------------------


def _gpu_cases():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(257, 301)).astype(F32)
    v = rng.normal(size=(1 << 15) + 3).astype(F32)
    a, b = rng.normal(size=(70, 33)).astype(F32), rng.normal(size=(33, 130)).astype(F32)
    ids = rng.integers(-1, 7, size=300).astype(np.int32)
    y = rng.normal(size=(300, 3)).astype(F32)
    ties = rng.integers(0, 3, size=(2000, 9)).astype(F32)  # many rows of few elements, many ties

    def kept(x):
        u = x * 2.0
        return u, u * tfc.reduce_sum(u) + u
    import tfc.ops.scatter as S
    return {
        "broadcast": (lambda x, b: tfc.tanh(x) * 2.0 + b, (x, x[0]), "elementwise"),
        "vectors": (kept, (v,), "reduction"),
        "views": (lambda x: tfc.transpose(x)[1:, ::2] + 1.0, (x,), None),
        "transpose": (lambda x: tfc.transpose(x), (x,), None),
        "reduce_axes": (lambda x: (tfc.reduce_max(x, axis=[0]), tfc.reduce_mean(x, axis=[1]), tfc.reduce_sum(x)),
                        (x,), "reduction"),
        "argmax_warps": (lambda t: tfc.argmax(t, axis=1), (ties,), None),
        "softmax_rows": (lambda a, b: tfc.nn.softmax(tfc.matmul(a, b)), (a, b), None),
        "matmul_blocked": (lambda a, b: tfc.matmul(a, b), (a, b), "matmul"),
        "matmul_tt": (lambda a, b: tfc.matmul(b, a, transpose_a=True, transpose_b=True), (a, b), "matmul"),
        "scatter_add": (lambda y, i: S.unsorted_segment_sum(y, i, 7), (y, ids), "reduction"),
        "int_division": (lambda p, q: (p // q, p % q), (np.array([7, -7, 5, 0, -2 ** 31], np.int32),
                                                          np.array([2, 2, 0, 0, -1], np.int32)), None),
    }


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(_gpu_cases()))
def test_on_a_gpu(case):
    """Representative lowerings launched on a real GPU through tfc's Driver
    against the numpy backend (skipped where no driver is usable)."""
    from tfc.backends.cuda.driver import available

    driver, why = available()
    if driver is None:
        pytest.skip(f"no GPU: {why}")
    fn, args, family = _gpu_cases()[case]
    check(fn, *args, family=family, driver=driver)
