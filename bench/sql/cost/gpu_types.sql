-- The GPU types the availability updater writes metrics for (three each: GpusAvailable, GpusInUse, GpusUsed).
SELECT count(*) FROM gpu_types
