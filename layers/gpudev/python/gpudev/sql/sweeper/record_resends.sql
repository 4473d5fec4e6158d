-- The create jobs just sent again: counted on rows that are still pending without an
-- execution (one that started meanwhile needs no count).
UPDATE reservations SET
    create_job_resends = create_job_resends + 1,
    create_job_resent_at = now(),
    current_detailed_status = 'waiting to start: its create job was sent again'
WHERE reservation_id = ANY(%(reservation_ids)s::uuid[])
  AND status = 'pending'
  AND execution_arn IS NULL
RETURNING reservation_id
