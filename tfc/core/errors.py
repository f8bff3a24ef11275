"""Exceptions users catch (TensorFlow's names), and numpy's floating-point
warnings kept out of them."""
import warnings


def _quiet_numpy_warnings() -> None:
    """Ignore numpy's floating-point warnings from tfc's own kernel calls (an
    overflow to inf, 0 * inf): tensors follow IEEE as in TensorFlow, which never
    warns. Only warnings attributed to tfc's modules: the user's own numpy code
    still warns, and a filter the user adds later (``-W error``) wins."""
    warnings.filterwarnings("ignore", r"(overflow|invalid value|divide by zero|underflow) encountered",
                            RuntimeWarning, r"tfc(\.|$)")


_quiet_numpy_warnings()


class InvalidArgumentError(ValueError):
    """A data-dependent check failed while (compiled) code ran."""


class AssertionFailedError(InvalidArgumentError, AssertionError):
    """A tfc.Assert (or a converted ``assert``) failed while compiled code ran:
    an AssertionError, as eagerly, and an InvalidArgumentError, as any failed
    run-time check of compiled code."""


class UnavailableError(RuntimeError):
    """A backend cannot run on this machine: for CUDA, no pycuda or
    cuda-bindings, no libcuda, no device, or the driver failed to initialize.
    The message names each reason."""


class CompileError(RuntimeError):
    """Generated code was refused by a compiler that tfc calls: for CUDA, the
    driver's JIT rejecting a PTX module (the message holds the JIT log)."""


# tfc.errors shows the error types only (_quiet_numpy_warnings is tfc's own)
from tfc.core.dtypes import PrecisionWarning  # noqa: E402  (a warning users filter: tfc.errors' name for it)

__all__ = ["InvalidArgumentError", "AssertionFailedError", "UnavailableError", "CompileError", "PrecisionWarning"]


def __dir__():
    return list(__all__)
