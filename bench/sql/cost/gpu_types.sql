-- The GPU types the availability updater writes metrics for (two each).
SELECT count(*) FROM gpu_types
