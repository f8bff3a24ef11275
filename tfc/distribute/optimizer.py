"""``DistributedOptimizer``: an optimizer whose ``minimize`` and
``apply_gradients`` average the gradients over all ranks first."""
from __future__ import annotations

from tfc.distribute.tape import DEFAULT_BUCKET_BYTES, DistributedGradientTape, average_gradients
from tfc.nn.optimizers import _record_loss


class DistributedOptimizer:
    """Wraps a ``tfc.optimizers`` optimizer (Horovod's
    ``DistributedOptimizer``): ``minimize`` computes the gradients with a
    ``DistributedGradientTape`` (all-reduced during the backward pass);
    ``apply_gradients`` averages gradients computed elsewhere (a None
    gradient on some ranks counting as zeros there), then applies them.
    Slots, learning rate, checkpointing: the wrapped optimizer's."""

    def __init__(self, optimizer, bucket_bytes: int = DEFAULT_BUCKET_BYTES):
        if not (hasattr(optimizer, "apply_gradients") and hasattr(optimizer, "minimize")):
            raise TypeError(f"DistributedOptimizer wraps a tfc optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        self.bucket_bytes = bucket_bytes

    def __getattr__(self, name):
        return getattr(self.optimizer, name)

    def apply_gradients(self, grads_and_vars) -> None:
        pairs = list(grads_and_vars)
        grads = average_gradients([g for g, _ in pairs], self.bucket_bytes, [v for _, v in pairs])
        self.optimizer.apply_gradients(zip(grads, [v for _, v in pairs]))

    def minimize(self, loss_fn, var_list):
        """One step: the averaged gradients of ``loss_fn()`` (this rank's
        shard's loss) applied to ``var_list``; returns this rank's loss."""
        tape, loss, var_list = _record_loss(loss_fn, var_list, f"{self.optimizer.name}.minimize")
        grads = DistributedGradientTape(tape, self.bucket_bytes).gradient(loss, var_list)
        self.optimizer.apply_gradients(zip(grads, var_list))
        return loss

    def __repr__(self) -> str:
        return f"DistributedOptimizer({self.optimizer!r})"
