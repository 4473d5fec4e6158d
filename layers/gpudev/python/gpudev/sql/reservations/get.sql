SELECT * FROM reservations WHERE reservation_id = %(reservation_id)s
