-- A node dedicated to profiling: labelled gpu-dev.pytorch.org/profiling=true, or tainted with
-- that key (docs/architecture.md "Isolation"). Where a GPU type has such nodes, profiling
-- reservations go only there and every other reservation stays off them; a profiling
-- reservation always holds whole nodes (gpudev/allocation/plan.py).
ALTER TABLE cluster_nodes ADD COLUMN profiling boolean NOT NULL DEFAULT false;
