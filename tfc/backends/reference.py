"""The reference executor: walks tensor-dialect IR and runs every op with its
registry kernel (region ops in Python). Slow and simple; it is the meaning of
the IR that passes and backends are checked against."""
from __future__ import annotations

import sys

import numpy as np
from xdsl.dialects import func

from tfc.core.errors import InvalidArgumentError
from tfc.dialects.tensor import (
    AssertOp, AssignVariableOp, ConditionOp, CondOp, ConstantOp, PrintOp, ReadVariableOp,
    RegistryOp, WhileOp, YieldOp, loc_str, spec_of,
)


class Cell:
    """A variable's storage while a function runs (``!tfc.ref`` arguments)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _conform(op, value, t):
    spec = spec_of(t)
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    want = spec.dtype.as_numpy_dtype
    if value.dtype != want:
        value = value.astype(want)
    if len(value.shape) != len(spec.shape) or any(
            d is not None and d != v for d, v in zip(spec.shape, value.shape)):
        raise AssertionError(f"{loc_str(op)}: {op.name} produced shape {value.shape}, its type says {t}")
    return value


def run_registry_op(op: RegistryOp, env: dict) -> None:
    """Run a generated registry op with its eager kernel; results go into ``env``."""
    opdef = op.OPDEF
    vals = [env[v] for v in op.operands]
    attrs = op.attr_values
    try:
        if opdef.quiet:
            with np.errstate(all="ignore"):
                out = opdef.kernel(*vals, **attrs)
        else:
            out = opdef.kernel(*vals, **attrs)
    except Exception as e:
        e.add_note(f"while running {op.name} at {loc_str(op)}")
        raise
    outs = [out] if len(op.results) == 1 else list(out)
    for r, v in zip(op.results, outs):
        env[r] = _conform(op, v, r.type)


class Executor:
    """Runs the functions of one module."""

    def __init__(self, module):
        self.module = module
        self.funcs = {op.sym_name.data: op for op in module.walk() if isinstance(op, func.FuncOp)}
        self._consts: dict[int, np.ndarray] = {}

    def call(self, name: str, args):
        """Run function ``name``; ``args`` are arrays and, for ``!tfc.ref``
        arguments, Cells. Returns the list of result arrays."""
        f = self.funcs[name]
        block = f.body.block
        if len(args) != len(block.args):
            raise TypeError(f"function @{name} takes {len(block.args)} arguments, got {len(args)}")
        return self.run_block(block, args, {})

    def run_block(self, block, args, env):
        env = dict(env)
        for a, v in zip(block.args, args):
            env[a] = v
        for op in block.ops:
            if isinstance(op, (func.ReturnOp, YieldOp)):
                return [env[v] for v in op.operands]
            if isinstance(op, ConditionOp):
                return env[op.cond]
            self.run_op(op, env)
        raise AssertionError("block without terminator")

    def run_op(self, op, env):
        if isinstance(op, RegistryOp):
            run_registry_op(op, env)
        elif isinstance(op, ConstantOp):
            v = self._consts.get(id(op))
            if v is None:
                v = self._consts[id(op)] = op.numpy()
            env[op.result] = v
        elif isinstance(op, ReadVariableOp):
            env[op.result] = env[op.ref].value
        elif isinstance(op, AssignVariableOp):
            env[op.ref].value = np.array(env[op.value])
        elif isinstance(op, CondOp):
            taken = op.then_region if bool(np.asarray(env[op.pred]).reshape(())) else op.else_region
            outs = self.run_block(taken.block, [], env)
            for r, v in zip(op.results, outs):
                env[r] = _conform(op, v, r.type)
        elif isinstance(op, WhileOp):
            vals = [env[v] for v in op.inits]
            limit = None if op.max_iterations is None else op.max_iterations.value.data
            n = 0
            while limit is None or n < limit:
                if not bool(np.asarray(self.run_block(op.cond_region.block, vals, env)).reshape(())):
                    break
                vals = self.run_block(op.body_region.block, vals, env)
                n += 1
            for r, v in zip(op.results, vals):
                env[r] = _conform(op, v, r.type)
        elif isinstance(op, PrintOp):
            from tfc.frontend.tracing import format_value

            sys.stdout.write(op.format.data.format(*(format_value(env[v]) for v in op.values)))
        elif isinstance(op, AssertOp):
            if not np.all(env[op.cond]):
                from tfc.frontend.tracing import format_value

                msg = op.message.data.format(*(format_value(env[v]) for v in op.data))
                raise InvalidArgumentError(f"{loc_str(op)}: assertion failed: {msg}")
        elif isinstance(op, func.CallOp):
            outs = self.call(op.callee.root_reference.data, [env[v] for v in op.arguments])
            for r, v in zip(op.results, outs):
                env[r] = v
        else:
            raise NotImplementedError(f"the reference executor cannot run {op.name}")


def run(module, args, name: str | None = None):
    """Run function ``name`` (the only one when None) of ``module`` on numpy arrays."""
    ex = Executor(module)
    if name is None:
        if len(ex.funcs) != 1:
            raise ValueError(f"the module has {len(ex.funcs)} functions; name one")
        (name,) = ex.funcs
    return ex.call(name, list(args))
