-- Impossible requests are refused, and every ending says why (issue #28 items 3 and 4;
-- docs/decisions.md, 2026-11-27 "Impossible requests refused; every ending says why").
--
-- max_nodes: the most nodes a type's node groups can ever hold (the sum of its Auto Scaling
-- groups' MaxSize, never fewer than they want or run), kept by the availability updater.
-- A submit for more nodes than that is refused; 0 means the type has no nodes and can get
-- none. max_nodes_since: when it last changed, so the allocator ends the queued requests a
-- shrunk type can no longer hold after a patience, not at the 48 h queue timeout.
ALTER TABLE gpu_types
    ADD COLUMN max_nodes integer NOT NULL DEFAULT 0
        CONSTRAINT gpu_types_max_nodes_check CHECK (max_nodes >= 0),
    ADD COLUMN max_nodes_since timestamptz;
GRANT UPDATE (max_nodes, max_nodes_since) ON gpu_types TO gpudev_reconcilers;

-- failure_reason (its first name) holds why any ending happened: cancelled, expired or
-- failed. Rows that ended before this say what their status line said.
UPDATE reservations
SET failure_reason = coalesce(
        nullif(btrim(current_detailed_status), ''), 'ended before endings recorded a reason'
    )
WHERE status IN ('cancelled', 'expired', 'failed')
  AND coalesce(btrim(failure_reason), '') = '';
-- The last line of defence: no path can end a reservation without saying why.
ALTER TABLE reservations ADD CONSTRAINT reservations_ending_reason_check CHECK (
    status NOT IN ('cancelled', 'expired', 'failed') OR coalesce(btrim(failure_reason), '') <> ''
);
