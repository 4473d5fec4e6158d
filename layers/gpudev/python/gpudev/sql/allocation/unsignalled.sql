-- Grants the execution has not been told about yet (a send that failed is retried here).
SELECT reservation_id, task_token, execution_arn
FROM reservations
WHERE status = 'queued' AND granted_at IS NOT NULL AND grant_signalled_at IS NULL
  AND task_token IS NOT NULL
