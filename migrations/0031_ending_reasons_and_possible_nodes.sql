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
-- The functions deployed before this migration still run while it applies, and again after
-- a rollback: they write a cancel's or an expiry's words to the status line only. An ending
-- whose statement wrote a new status line and no reason takes that line as its reason, so
-- they keep working. A statement that writes neither is still refused below.
CREATE FUNCTION reservations_reason_from_status_line() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.failure_reason := NEW.current_detailed_status;
    RETURN NEW;
END
$$;
CREATE TRIGGER reservations_reason_from_status_line
    BEFORE UPDATE OF status ON reservations
    FOR EACH ROW
    WHEN (
        NEW.status IN ('cancelled', 'expired', 'failed')
        AND coalesce(btrim(NEW.failure_reason), '') = ''
        AND NEW.current_detailed_status IS DISTINCT FROM OLD.current_detailed_status
        AND coalesce(btrim(NEW.current_detailed_status), '') <> ''
    )
    EXECUTE FUNCTION reservations_reason_from_status_line();
-- The last line of defence: no path can end a reservation without saying why.
ALTER TABLE reservations ADD CONSTRAINT reservations_ending_reason_check CHECK (
    status NOT IN ('cancelled', 'expired', 'failed') OR coalesce(btrim(failure_reason), '') <> ''
);
