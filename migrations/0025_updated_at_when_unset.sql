-- The updated_at trigger of reservations runs only for an update that leaves updated_at as it
-- was: every statement but the allocator's rewrite of the queue (allocation/record_waits.sql),
-- which sets updated_at = now() itself, the value the trigger would set. A plpgsql call per
-- row was ~0.1-0.15 s of that UPDATE at 100,000 waiting rows; a trigger's WHEN is checked
-- without calling the function. Nothing else sets updated_at, so every other statement gets
-- now() from the trigger as before (and one that set updated_at to another value would keep
-- it). Replaced in one statement; the same name, timing and function.
CREATE OR REPLACE TRIGGER reservations_updated_at BEFORE UPDATE ON reservations
    FOR EACH ROW WHEN (NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at)
    EXECUTE FUNCTION set_updated_at();
-- the allocator (run by the lifecycle's role) now names the column in its UPDATE
GRANT UPDATE (updated_at) ON reservations TO gpudev_lifecycle;
