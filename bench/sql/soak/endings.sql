SELECT status, count(*) FROM reservations GROUP BY status
