-- Granted at the pass's time (not now()): the pass planned each grant's end from it, and the
-- next pass reads that end back from this row (gpudev/allocation/plan.py `expected_end`).
-- The grant is also a timeline entry (kind grant: its slots and nodes), once per grant (a
-- reservation whose grant was lost is granted again by a later pass: keyed by the pass's
-- time; reservation_events_once, migration 0036).
WITH granted AS (
    INSERT INTO allocations (node_name, slot, reservation_id, rank)
    SELECT * FROM unnest(
        %(node_name)b::text[], %(slot)b::int[], %(reservation_id)b::uuid[], %(rank)b::int[]
    )
    RETURNING reservation_id, node_name, rank
), stamped AS (
    UPDATE reservations SET
        granted_at = %(granted_at)s,
        queue_position = NULL,
        estimated_start_at = %(granted_at)s,
        current_detailed_status = 'capacity granted, preparing'
    WHERE reservation_id IN (SELECT reservation_id FROM granted)
    RETURNING reservation_id, status, created_at
), recorded AS (
    INSERT INTO reservation_events (reservation_id, from_status, to_status, detail, kind, event_key)
    SELECT s.reservation_id, s.status, s.status,
           'capacity granted: ' || count(*) || ' slot(s) on '
               || string_agg(DISTINCT g.node_name || ' (node ' || g.rank || ')', ', '
                             ORDER BY g.node_name || ' (node ' || g.rank || ')'),
           'grant', 'grant:' || %(granted_at)s::timestamptz
    FROM stamped AS s JOIN granted AS g USING (reservation_id)
    GROUP BY s.reservation_id, s.status
    ON CONFLICT ON CONSTRAINT reservation_events_once DO NOTHING
)
-- how long each waited since it was submitted (the dashboard's queue wait)
SELECT reservation_id::text, extract(epoch FROM now() - created_at)::float8 FROM stamped
