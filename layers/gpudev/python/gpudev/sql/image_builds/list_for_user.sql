-- The caller's contexts, newest first, with their build when there is one (none: uploaded,
-- never built).
SELECT o.context_hash, o.first_at, b.status, b.phase, b.image_digest, b.size_bytes,
       b.finished_at, b.log_tail
FROM image_build_owners o
LEFT JOIN image_builds b ON b.context_hash = o.context_hash
WHERE o.user_id = %(username)s
ORDER BY o.first_at DESC, o.context_hash
LIMIT %(limit)s
