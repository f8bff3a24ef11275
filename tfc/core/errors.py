"""Exceptions users catch (TensorFlow's names)."""


class InvalidArgumentError(ValueError):
    """A data-dependent check failed while (compiled) code ran."""


class OpError(Exception):
    """Base for errors raised by the runtime that are not argument errors."""
