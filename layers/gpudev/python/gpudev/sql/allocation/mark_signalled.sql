UPDATE reservations SET grant_signalled_at = now()
WHERE reservation_id = ANY (%(reservation_ids)s::uuid[])
