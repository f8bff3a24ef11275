"""Exceptions users catch (TensorFlow's names)."""


class InvalidArgumentError(ValueError):
    """A data-dependent check failed while (compiled) code ran."""


class AssertionFailedError(InvalidArgumentError, AssertionError):
    """A tfc.Assert (or a converted ``assert``) failed while compiled code ran:
    an AssertionError, as eagerly, and an InvalidArgumentError, as any failed
    run-time check of compiled code."""
