-- Per activated reservation: submit to active, grant to active (seconds), and when.
SELECT extract(epoch FROM launched_at - created_at),
       extract(epoch FROM launched_at - granted_at),
       extract(epoch FROM launched_at)
FROM reservations
WHERE reservation_id = ANY (%(ids)s::uuid[]) AND launched_at IS NOT NULL
