"""The `gpu-dev` commands, one module per area; `gpudev_cli.main` registers them."""
