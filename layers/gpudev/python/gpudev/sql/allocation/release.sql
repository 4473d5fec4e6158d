-- Give the reservation's slots back (tear down, or a grant whose execution is gone).
WITH released AS (
    DELETE FROM allocations WHERE reservation_id = %(reservation_id)s RETURNING node_name
)
SELECT count(*)::int FROM released
