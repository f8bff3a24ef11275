"""Code generation and runtimes."""
