-- One reservation's samples since a moment (the last clock hour), oldest first.
SELECT gpu, sampled_at, util_percent, memory_used_mib
FROM gpu_samples
WHERE reservation_id = %(reservation_id)s AND sampled_at >= %(since)s
ORDER BY gpu, sampled_at
