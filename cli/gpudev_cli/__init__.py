"""gpu-dev command-line interface."""
