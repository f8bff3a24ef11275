"""xDSL dialects of each IR level."""
