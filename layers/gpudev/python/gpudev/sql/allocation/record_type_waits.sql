-- Each GPU type's wait for a new request, as this pass computed it; a type the pass did not
-- plan (no node, no queue) has none. Written only where it changed.
UPDATE gpu_types g SET estimated_wait_minutes = w.minutes
FROM gpu_types t
LEFT JOIN unnest(%(gpu_types)s::text[], %(minutes)s::int[]) AS w (gpu_type, minutes)
       ON w.gpu_type = t.gpu_type
WHERE g.gpu_type = t.gpu_type
  AND g.estimated_wait_minutes IS DISTINCT FROM w.minutes
