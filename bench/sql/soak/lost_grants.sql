-- Grants that came to nothing: reservations given their nodes that were never launched,
-- though nobody cancelled them (a grant signal lost, or a grant failed after it).
SELECT count(*)
FROM reservations
WHERE reservation_id = ANY (%(ids)s::uuid[])
  AND granted_at IS NOT NULL
  AND launched_at IS NULL
  AND cancel_requested_at IS NULL
