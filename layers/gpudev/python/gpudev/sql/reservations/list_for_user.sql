SELECT * FROM reservations
WHERE user_id = %(user_id)s
  AND (%(statuses)s::text[] IS NULL OR status = ANY (%(statuses)s::text[]))
ORDER BY created_at DESC, reservation_id
LIMIT %(limit)s OFFSET %(offset)s
