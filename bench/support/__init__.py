"""Helpers of the benchmarks in bench/: each script there (`make bench` runs `bench/*.py`)
imports its parts from here, so nothing in this package is run as a benchmark of its own."""
