SELECT * FROM gpu_types
WHERE is_active
ORDER BY max_gpus = 0, gpu_type
