"""GPU availability: what the cluster can give right now, per GPU type (seeds 000/001)."""
