"""``tfc-quantize``: post-training int8 quantization of an L1 module.

The pass rewrites every matmul and conv2d whose weights are a constant (the
float weights, frozen; see tfc/quantization.py for how a compiled function's
variables become constants) with the ops of tfc/ops/quant.py:

- ``mode=weights``: the op becomes ``weight_quantized_matmul`` / ``_conv2d`` of
  its float input and int8 weights (symmetric, per output channel unless
  ``per_channel=false``); the bias add and activation after it stay float.
- ``mode=static`` (the default): the op, a bias add of a constant after it and a
  relu after that (a dense layer, a conv layer) become one ``quantized_matmul``
  / ``quantized_conv2d`` on int8 codes: the input is quantized with its
  calibrated range, the bias is int32 with scale s_in * s_w and the input's zero
  point folded into it, the relu is the requantization's clamp at the output's
  zero point. An op needs the calibrated ranges of its input and of its result
  (after bias and relu), as attributes ``tfc.quant_input`` and
  ``tfc.quant_output`` (``[lo : f64, hi : f64]``) that calibration writes; an
  op without them stays float. Where every user of a quantized result is
  another quantized op, the result stays int8 (the dequantize / quantize pair
  between them cancels: it is never written), also through max pools and
  reshapes on the way (exact on the codes: quantization is monotone);
  otherwise the op gives the float result directly (``out_dtype = f32``: its
  int32 accumulator times s_in * s_w).

``exclude`` (comma-separated) names op kinds (``matmul``, ``conv2d``) or weights
(the ``tfc.variable`` name a frozen weight constant carries, e.g. ``dense_kernel_1``)
to leave float. Ops inside control-flow regions are left float. Quantization
parameters follow TFLite: int8 weights in [-127, 127], activations asymmetric
int8 with 0.0 exactly representable.

``codes=f32`` (what ``tfc.compile`` asks for the numpy backend) holds in float32
the int8 codes that a quantize makes for a matmul, and those the quantized ops
after it pass on (the same integers, typed f32), which float BLAS reads with no
conversion; the codes a quantize makes for a conv2d stay int8 (its patches and
the max pools after it move a quarter of the bytes: faster on the CPU, measured in
docs/quantization.md). ``codes=i8`` (the default; the GPU's dp4a kernels) holds
all codes in int8.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, FloatAttr, StringAttr, f64
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tfc.core import dtypes
from tfc.dialects.tensor import ConstantOp, OpVerifyError, build_op, spec_of
from tfc.ops import quant  # noqa: F401  (registers the quantized ops)
from tfc.passes.pipeline import require_tensor_ir

MODES = quant.MODES
CODES = {"i8": dtypes.int8, "f32": dtypes.float32}  # codes=...: what the activations' int8 codes are held in
KINDS = ("matmul", "conv2d")
INPUT_RANGE, OUTPUT_RANGE = "tfc.quant_input", "tfc.quant_output"
WEIGHT_NAME = "tfc.variable"  # the name of the variable a frozen weight constant was
_INT32 = np.iinfo(np.int32)


class Chain:
    """A quantizable op and what follows it: ``op`` (matmul or conv2d), its input
    ``x``, its weights as a constant, an optional bias add of a constant and an
    optional relu; ``end`` is the last value of the chain."""

    def __init__(self, op, kind, x, weight_op, ops, bias, relu, end, bias_op=None):
        self.op, self.kind, self.x, self.weight_op, self.bias_op = op, kind, x, weight_op, bias_op
        self.ops, self.bias, self.relu, self.end = ops, bias, relu, end

    @property
    def weight_name(self) -> str | None:
        a = self.weight_op.attributes.get(WEIGHT_NAME)
        return a.data if isinstance(a, StringAttr) else None

    def weight_matrix(self) -> np.ndarray:
        """The float weights as [K, N] (N: output channels)."""
        w = self.weight_op.numpy()
        if self.kind == "matmul":
            return w.T if self.op.attr_values["transpose_b"] else w
        return w.reshape(-1, w.shape[-1])


def _only_user(value):
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


def match_chain(op) -> Chain | None:
    """The chain starting at ``op``, or None if ``op`` is not quantizable."""
    if op.name == "tfc.matmul":
        kind = "matmul"
        if op.attr_values["transpose_a"]:
            return None
    elif op.name == "tfc.conv2d":
        kind = "conv2d"
    else:
        return None
    x, w = op.operands
    xs, ws = spec_of(x.type), spec_of(w.type)
    if not isinstance(w.owner, ConstantOp) or not xs.dtype.is_floating or ws.ndim != (2 if kind == "matmul" else 4):
        return None
    n = ws.shape[0] if kind == "matmul" and op.attr_values["transpose_b"] else ws.shape[-1]
    out_spec = spec_of(op.results[0].type)
    ops, end, bias, bias_op, relu = [op], op.results[0], None, None, False
    user = _only_user(end)
    if user is not None and user.name == "tfc.add":
        other = user.operands[1] if user.operands[0] is end else user.operands[0]
        bs = spec_of(other.type)
        if (other is not end and isinstance(other.owner, ConstantOp) and bs.dtype == xs.dtype and bs.ndim >= 1
                and bs.shape[-1] == n and all(d == 1 for d in bs.shape[:-1]) and bs.ndim <= out_spec.ndim
                and spec_of(user.results[0].type) == out_spec):
            bias_op = other.owner
            bias = bias_op.numpy().reshape(-1)
            ops.append(user)
            end = user.results[0]
            user = _only_user(end)
    if user is not None and user.name == "tfc.relu":
        relu = True
        ops.append(user)
        end = user.results[0]
    return Chain(op, kind, x, w.owner, ops, bias, relu, end, bias_op)


def chains_of(f) -> list[Chain]:
    """The quantizable chains of function ``f``'s body (not inside regions), in order."""
    out = []
    for op in f.body.block.ops:
        c = match_chain(op)
        if c is not None:
            out.append(c)
    return out


def static_unsupported(c: Chain) -> str | None:
    """Why static int8 does not take chain ``c`` (None: it does, given its ranges)."""
    x = spec_of(c.x.type)
    if x.dtype != dtypes.float32:
        return f"its input is {x.dtype.name} (static int8 takes float32 models)"
    if c.kind == "matmul" and x.ndim != 2:
        return f"its input has rank {x.ndim} (static int8 matmul takes matrices)"
    if get_range(c.op, INPUT_RANGE) is None:
        return "it has no calibrated range"
    return None


def set_range(op, name: str, lo: float, hi: float) -> None:
    """Record a calibrated range on ``op`` (what calibration writes)."""
    op.attributes[name] = ArrayAttr([FloatAttr(float(lo), f64), FloatAttr(float(hi), f64)])


def get_range(op, name: str):
    a = op.attributes.get(name)
    if a is None:
        return None
    try:
        lo, hi = (float(v.value.data) for v in a.data)
    except (AttributeError, TypeError, ValueError):
        raise OpVerifyError(op, f"attribute {name} must be [lo : f64, hi : f64], got {a}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
        raise OpVerifyError(op, f"attribute {name} must be a finite range lo <= hi, got [{lo}, {hi}]")
    return lo, hi


def activation_qparams(lo: float, hi: float) -> tuple[float, int]:
    """(scale, zero point) of asymmetric int8 codes covering [lo, hi] and 0.0
    (exactly representable: zero padding and relu stay exact). A range of only
    0 gets scale 1 (every code means 0 then)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / (quant.INT8_MAX - quant.INT8_MIN)
    if not scale > 0:
        return 1.0, 0
    zero_point = int(np.clip(np.rint(quant.INT8_MIN - lo / scale), quant.INT8_MIN, quant.INT8_MAX))
    return float(scale), zero_point


def weight_qparams(w: np.ndarray, per_channel: bool) -> tuple[np.ndarray, np.ndarray]:
    """(int8 codes, scales [N] in float64) of [K, N] weights: symmetric, in
    [-127, 127], per output channel (column) or one scale for all. An all-zero
    channel gets scale 1 (its codes are all 0)."""
    w64 = w.astype(np.float64)
    amax = np.abs(w64).max(axis=0) if w64.shape[0] else np.zeros(w64.shape[1])
    if not per_channel:
        amax = np.full_like(amax, amax.max(initial=0.0))
    scale = np.where(amax > 0, amax / quant.INT8_MAX, 1.0)
    codes = np.clip(np.rint(w64 / scale), -quant.INT8_MAX, quant.INT8_MAX).astype(np.int8)
    return codes, scale


# ops whose result on int8 codes is the codes of their result on the real values,
# exactly: a max pool (quantization is monotone) and a reshape
_CODE_PRESERVING = {"tfc.max_pool2d": ("ksize", "strides", "padding"), "tfc.reshape": ("shape",)}


def _through_code_preserving_ops(value):
    """(the max pools and reshapes that ``value`` flows through alone, each the
    only user of the one before, and the value at the end of them)."""
    path = []
    while True:
        user = _only_user(value)
        if user is None or user.name not in _CODE_PRESERVING or user.operands[0] is not value \
                or len(user.operands) != 1:
            return path, value
        path.append(user)
        value = user.results[0]


def _attrs_of(op) -> dict:
    return {k: op.attr_values[k] for k in _CODE_PRESERVING[op.name]}


def _constant(arr, dt, before, loc):
    c = ConstantOp.from_numpy(arr, dt)
    c.location = loc
    Rewriter.insert_op(c, InsertPoint.before(before))
    return c.result


def _registry_op(name, operands, attrs, before, loc):
    op = build_op(name, operands, attrs, loc=loc)
    Rewriter.insert_op(op, InsertPoint.before(before))
    return op.results[0]


@dataclass(frozen=True)
class QuantizePass(ModulePass):
    """``tfc-quantize{mode=static|weights per_channel=true exclude="matmul,dense_kernel_1" codes=i8|f32}``."""

    name = "tfc-quantize"

    mode: str = "static"
    per_channel: bool = True
    exclude: str = ""
    codes: str = "i8"

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"tfc-quantize: mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.codes not in CODES:
            raise ValueError(f"tfc-quantize: codes must be one of {', '.join(CODES)}, got {self.codes!r}")

    def _codes_for(self, kind: str) -> str:
        """What the codes a quantize makes for an op of ``kind`` are held in."""
        return "f32" if self.codes == "f32" and kind == "matmul" else "i8"

    @staticmethod
    def _codes_attr(codes: str) -> dict:
        """The ops' ``codes`` attribute (absent for int8, the default)."""
        return {} if codes == "i8" else {"codes": CODES[codes]}

    def excluded(self, chain: Chain) -> bool:
        names = {s.strip() for s in self.exclude.split(",") if s.strip()}
        return chain.kind in names or chain.weight_name in names

    def apply(self, ctx, op) -> None:
        require_tensor_ir(self.name, op)
        for f in op.ops:
            if isinstance(f, func.FuncOp):
                self.quantize_function(f)

    def quantize_function(self, f) -> None:
        chains = [c for c in chains_of(f) if not self.excluded(c)]
        if self.mode == "weights":
            for c in chains:
                self._weight_only(c)
            return
        chains = [c for c in chains if self._static_ready(c)]
        consumers = {}
        for c in chains:
            consumers.setdefault(c.x, []).append(c)
        int8_results = {}  # a value kept int8 -> (its int8 codes' value, scale, zero point, held in)
        passed = []  # the float max pools / reshapes now run on int8 codes
        for c in chains:
            path, value = _through_code_preserving_ops(c.end)
            # int8 out where every use of the result (after max pools and reshapes,
            # which are exact on the codes) is as the input of a quantized op
            users, uses = consumers.get(value, []), list(value.uses)
            int8_out = bool(users) and len(uses) == len(users) and all(
                u.index == 0 and any(u.operation is d.op for d in users) for u in uses)
            self._static(c, int8_results, int8_out, path if int8_out else [])
            if int8_out:
                passed.extend(path)
        # the float ops, now unused, last first (a replaced pool still reads its chain's relu)
        position = {id(op): i for i, op in enumerate(f.body.block.ops)}
        for old in sorted([op for c in chains for op in c.ops] + passed, key=lambda op: -position[id(op)]):
            if all(not r.uses for r in old.results):
                Rewriter.erase_op(old)
        for c in reversed(chains):
            for const in (c.weight_op, c.bias_op):
                if const is not None and const.parent is not None and not const.result.uses:
                    Rewriter.erase_op(const)

    def _once_per_tensor(self, per_channel_values: np.ndarray) -> np.ndarray:
        """A per-channel vector as stored: per-tensor weights give every channel
        the same value, stored once (shape [1])."""
        return per_channel_values if self.per_channel else per_channel_values[:1]

    @staticmethod
    def _static_ready(c: Chain) -> bool:
        return static_unsupported(c) is None and get_range(c.op, OUTPUT_RANGE) is not None

    def _weight_only(self, c: Chain) -> None:
        codes, scale = weight_qparams(c.weight_matrix(), self.per_channel)
        loc, dt = c.op.location, spec_of(c.x.type).dtype
        if c.kind == "conv2d":
            codes = codes.reshape(c.weight_op.numpy().shape)
        w = _constant(codes, dtypes.int8, c.op, loc)
        s = _constant(self._once_per_tensor(scale).astype(dt.as_numpy_dtype), dt, c.op, loc)
        attrs = {k: c.op.attr_values[k] for k in ("strides", "padding", "dilations")} if c.kind == "conv2d" else {}
        x = c.op.operands[0]  # (c.x may have been replaced by an earlier rewrite)
        new = _registry_op(f"weight_quantized_{c.kind}", [x, w, s], attrs, c.op, loc)
        c.op.results[0].replace_all_uses_with(new)
        Rewriter.erase_op(c.op)
        if not c.weight_op.result.uses:
            Rewriter.erase_op(c.weight_op)

    def _static(self, c: Chain, int8_results: dict, int8_out: bool, path=()) -> None:
        loc, at = c.op.location, c.end.owner
        x = c.op.operands[0]  # (c.x may have been replaced by an earlier rewrite's float result)
        if x in int8_results:  # the producer's int8 result: no dequantize / quantize between
            xq, sx, zx, codes_in = int8_results[x]
        else:
            sx, zx = activation_qparams(*get_range(c.op, INPUT_RANGE))
            codes_in = self._codes_for(c.kind)
            xq = _registry_op("quantize", [x], {"scale": sx, "zero_point": zx, **self._codes_attr(codes_in)}, at, loc)
        codes, sw = weight_qparams(c.weight_matrix(), self.per_channel)
        acc_scale = sx * sw
        bias = np.zeros(codes.shape[1]) if c.bias is None else c.bias.astype(np.float64)
        # the input's zero point folded in: sum_k (x_k - zx) w_kn = sum_k x_k w_kn - zx sum_k w_kn
        bias_q = np.rint(bias / acc_scale) - zx * codes.astype(np.int64).sum(axis=0)
        if bias_q.size and (bias_q.min() < _INT32.min or bias_q.max() > _INT32.max):
            raise ValueError(f"tfc-quantize: the bias of {c.kind} at {loc} does not fit in int32 at scale "
                             "s_in * s_w; exclude this op")
        if int8_out:
            so, zo = activation_qparams(*get_range(c.op, OUTPUT_RANGE))
            multiplier, out_dtype = acc_scale / so, dtypes.int8
        else:
            so, zo, multiplier, out_dtype = None, 0, acc_scale, dtypes.float32
        if c.kind == "conv2d":
            codes = codes.reshape(c.weight_op.numpy().shape)
        w = _constant(codes, dtypes.int8, at, loc)
        b = _constant(bias_q.astype(np.int32), dtypes.int32, at, loc)
        m = _constant(self._once_per_tensor(multiplier).astype(np.float32), dtypes.float32, at, loc)
        attrs = {"out_zero_point": zo, "relu": c.relu, "out_dtype": out_dtype, **self._codes_attr(codes_in)}
        if c.kind == "conv2d":
            attrs.update({k: c.op.attr_values[k] for k in ("strides", "padding", "dilations")}, pad_value=zx)
        new = _registry_op(f"quantized_{c.kind}", [xq, w, b, m], attrs, at, loc)
        if int8_out:
            end = c.end
            for op in path:  # the same max pools and reshapes, on the codes
                new = _registry_op(op.name[len("tfc."):], [new], _attrs_of(op), op, op.location)
                end = op.results[0]
            int8_results[end] = (new, so, zo, codes_in)
        else:
            c.end.replace_all_uses_with(new)
