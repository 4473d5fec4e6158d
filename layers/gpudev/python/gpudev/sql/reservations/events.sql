-- A reservation's timeline, oldest first, one page (the route bounds limit and offset).
SELECT * FROM reservation_events
WHERE reservation_id = %(reservation_id)s
ORDER BY event_id
LIMIT %(limit)s OFFSET %(offset)s
