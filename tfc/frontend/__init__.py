"""Front ends: tracing to IR, tfc.function, AutoGraph."""
