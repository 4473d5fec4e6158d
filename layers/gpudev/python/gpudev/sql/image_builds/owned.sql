-- Since when the caller has had this context (none: not theirs).
SELECT first_at FROM image_build_owners
WHERE user_id = %(username)s AND context_hash = %(context_hash)s
