"""Tracing, tfc.function and input signatures."""
