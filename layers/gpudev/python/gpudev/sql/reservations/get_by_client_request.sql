SELECT * FROM reservations
WHERE user_id = %(user_id)s AND client_request_id = %(client_request_id)s
