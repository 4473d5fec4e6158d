-- Granted at the pass's time (not now()): the pass planned each grant's end from it, and the
-- next pass reads that end back from this row (gpudev/allocation/plan.py `expected_end`).
WITH granted AS (
    INSERT INTO allocations (node_name, slot, reservation_id, rank)
    SELECT * FROM unnest(
        %(node_name)b::text[], %(slot)b::int[], %(reservation_id)b::uuid[], %(rank)b::int[]
    )
    RETURNING reservation_id
)
UPDATE reservations SET
    granted_at = %(granted_at)s,
    queue_position = NULL,
    estimated_start_at = %(granted_at)s,
    current_detailed_status = 'capacity granted, preparing'
WHERE reservation_id IN (SELECT reservation_id FROM granted)
-- how long each waited since it was submitted (the dashboard's queue wait)
RETURNING reservation_id::text, extract(epoch FROM now() - created_at)::float8
