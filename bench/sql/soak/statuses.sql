SELECT reservation_id::text, status FROM reservations
