-- The execution takes the reservation: records its ARN; pending becomes queued.
UPDATE reservations SET
    execution_arn = %(execution_arn)s,
    status = CASE WHEN status = 'pending' THEN 'queued' ELSE status END,
    current_detailed_status = CASE
        WHEN status = 'pending' THEN 'waiting for capacity' ELSE current_detailed_status END
WHERE reservation_id = %(reservation_id)s
RETURNING *
