-- The first reservation of a repeated client request id, only for the bound principal.
SELECT r.* FROM reservations r
JOIN users u ON u.username = r.user_id AND u.principal_arn = %(principal_arn)s
WHERE r.user_id = %(user_id)s AND r.client_request_id = %(client_request_id)s
