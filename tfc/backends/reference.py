"""The reference executor: walks tensor-dialect IR and runs every op with its
registry kernel (region ops in Python). Slow and simple; it is the meaning of
the IR that passes and backends are checked against."""
from __future__ import annotations

import sys

import numpy as np
from xdsl.dialects import func

from tfc.core.cell import Cell  # noqa: F401 (its home before tfc.core.cell; tests import it here)
from tfc.core.errors import AssertionFailedError
from tfc.dialects.fused import FusedOp
from tfc.dialects.tensor import (
    AssertOp, AssignVariableOp, ConditionOp, CondOp, ConstantOp, PrintOp, ReadVariableOp,
    RegistryOp, WhileOp, YieldOp, loc_str,
)
from tfc.dialects.evaluate import conform, run_registry_op


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
        elif isinstance(op, FusedOp):
            from tfc.backends.vectorized import run_fused

            for r, v in zip(op.outs, run_fused(op, [env[v] for v in op.inputs])):
                env[r] = conform(op, v, r.type)
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
                env[r] = conform(op, v, r.type)
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
                env[r] = conform(op, v, r.type)
        elif isinstance(op, PrintOp):
            write_print(op.format.data, [env[v] for v in op.values],
                        None if op.stream is None else op.stream.data,
                        None if op.summarize is None else op.summarize.value.data)
        elif isinstance(op, AssertOp):
            if not np.all(env[op.cond]):
                raise assertion_failed(loc_str(op), op.message.data, *(env[v] for v in op.data))
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


# -- run-time behaviour shared by every backend ---------------------------------------

def write_print(fmt: str, values, stream=None, summarize=None) -> None:
    """What a compiled ``tfc.print`` writes: as eager tfc.print (stream "stderr"
    or stdout; ``summarize`` entries per axis end) or as a converted ``print``."""
    if summarize is None:
        from tfc.core.tensor import _format_value as format_value
    else:
        from functools import partial

        from tfc.ops.control_flow import format_value
        format_value = partial(format_value, summarize=summarize)
    out = sys.stderr if stream == "stderr" else sys.stdout
    out.write(fmt.format(*(format_value(np.asarray(v)) for v in values)))


def assertion_failed(where: str, message: str, *data) -> AssertionFailedError:
    """The error a failed compiled assert raises."""
    from tfc.core.tensor import _format_value as format_value

    msg = message.format(*(format_value(np.asarray(v)) for v in data))
    return AssertionFailedError(f"{where}: assertion failed: {msg}")
