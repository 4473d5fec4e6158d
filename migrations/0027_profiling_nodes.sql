-- A node dedicated to profiling: labelled gpu-dev.pytorch.org/profiling=true, or tainted with
-- that key (docs/security.md "Isolation"). Where a GPU type has such nodes, profiling
-- reservations go only there and every other reservation stays off them; a profiling
-- reservation always holds whole nodes (gpudev/allocation/plan.py).
ALTER TABLE cluster_nodes ADD COLUMN profiling boolean NOT NULL DEFAULT false;

-- The last line of defence (the allocator never plans it, allocation/plan.py): a node where a
-- profiling reservation holds a slot holds no other reservation's. Checked once per
-- statement, on the nodes the statement allocated (a grant is one INSERT).
CREATE FUNCTION allocations_profiling_alone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1
        FROM allocations a
        JOIN reservations r USING (reservation_id)
        WHERE a.node_name IN (SELECT node_name FROM granted)
        GROUP BY a.node_name
        HAVING bool_or(r.profiling) AND count(DISTINCT a.reservation_id) > 1
    ) THEN
        RAISE EXCEPTION 'a profiling reservation would share its node with another reservation'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'allocations_profiling_alone';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER allocations_profiling_alone
AFTER INSERT ON allocations
REFERENCING NEW TABLE AS granted
FOR EACH STATEMENT EXECUTE FUNCTION allocations_profiling_alone();
