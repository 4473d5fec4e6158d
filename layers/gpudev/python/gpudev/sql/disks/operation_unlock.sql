SELECT pg_advisory_unlock(7346003, hashtext(%(disk_id)s::text))
