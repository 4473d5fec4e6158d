SELECT * FROM reservation_events
WHERE reservation_id = %(reservation_id)s
ORDER BY event_id
