WITH granted AS (
    INSERT INTO allocations (node_name, slot, reservation_id, rank)
    SELECT * FROM unnest(
        %(node_name)b::text[], %(slot)b::int[], %(reservation_id)b::uuid[], %(rank)b::int[]
    )
    RETURNING reservation_id
)
UPDATE reservations SET
    granted_at = now(),
    queue_position = NULL,
    estimated_start_at = now(),
    current_detailed_status = 'capacity granted, preparing'
WHERE reservation_id IN (SELECT reservation_id FROM granted)
