"""GPUs used, not just held: the DCGM exporter's samples per reservation, their hourly
rollups, and idle reclaim (docs/utilisation.md)."""
