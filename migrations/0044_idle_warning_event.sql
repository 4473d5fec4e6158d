-- The idle warning on the public bus (issues #35 and #36; docs/notifications.md,
-- docs/decisions.md 2026-11-27 "The idle warning on the bus: a detail-type of its own").
-- Applies after 0039 (the bus) and 0040 (idle reclaim).
--
-- idle_ends_at: when a warned reservation ends unless its GPUs are used, written by the
-- availability updater with the warning (sql/utilisation/record_idle.sql), cleared with it.
ALTER TABLE reservations ADD COLUMN idle_ends_at timestamptz;
GRANT SELECT (idle_ends_at) ON reservations TO gpudev_reconcilers;
GRANT UPDATE (idle_ends_at) ON reservations TO gpudev_reconcilers;
GRANT UPDATE (idle_ends_at) ON reservations TO gpudev_api;

-- A sixth detail-type: an addition to schema version 1 (the others are unchanged).
ALTER TABLE bus_events DROP CONSTRAINT bus_events_detail_type_check;
ALTER TABLE bus_events ADD CONSTRAINT bus_events_detail_type_check CHECK (
    detail_type IN (
        'Reservation Queued', 'Reservation Active', 'Reservation Warning',
        'Reservation Ended', 'Reservation Health', 'Reservation Idle'
    )
);

-- 0039's trigger function, everything it did, and the idle warning.
CREATE OR REPLACE FUNCTION record_bus_events() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    key text;
    level integer;
    utc text := 'YYYY-MM-DD"T"HH24:MI:SS"Z"';
BEGIN
    -- Queued: once, when it first waits behind others: a place in the queue and a start
    -- later than now (NULL: it never fits as things are). A request the allocator only has
    -- not granted yet (its start is now) is not told it queued.
    -- (A row that already qualified before this change has its event: the allocator's
    -- passes rewrite waiting rows often, and skip the insert's key lookup here.)
    IF NEW.status = 'queued' AND NEW.queue_position IS NOT NULL
       AND (NEW.estimated_start_at IS NULL OR NEW.estimated_start_at > now())
       AND NOT (
           OLD.status = 'queued' AND OLD.queue_position IS NOT NULL
           AND (OLD.estimated_start_at IS NULL OR OLD.estimated_start_at > now())
       ) THEN
        key := NEW.reservation_id || '/queued';
        INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)
        VALUES (key, NEW.reservation_id, 'Reservation Queued', bus_event_detail(NEW, key,
            jsonb_build_object(
                'queue_position', NEW.queue_position,
                'estimated_wait_minutes',
                ceil(extract(epoch FROM NEW.estimated_start_at - now()) / 60)::integer
            )))
        ON CONFLICT (event_key) DO NOTHING;
    END IF;
    IF NEW.status = 'active' AND OLD.status IS DISTINCT FROM 'active' THEN
        key := NEW.reservation_id || '/active';
        INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)
        VALUES (key, NEW.reservation_id, 'Reservation Active', bus_event_detail(NEW, key,
            jsonb_build_object(
                'ssh_command', NEW.ssh_command,
                'expires_at', to_char(NEW.expires_at AT TIME ZONE 'UTC', utc)
            )))
        ON CONFLICT (event_key) DO NOTHING;
    END IF;
    -- Warnings: each level once per expiry (an extension moves the expiry, and the
    -- lifecycle's warnings start over: so do these).
    IF NEW.status = 'active' THEN
        FOREACH level IN ARRAY NEW.warnings_sent LOOP
            CONTINUE WHEN level = ANY(OLD.warnings_sent)
                AND OLD.expires_at IS NOT DISTINCT FROM NEW.expires_at;
            key := NEW.reservation_id || '/warning/' || level || '/'
                || to_char(NEW.expires_at AT TIME ZONE 'UTC', utc);
            INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)
            VALUES (key, NEW.reservation_id, 'Reservation Warning', bus_event_detail(NEW, key,
                jsonb_build_object(
                    'minutes_left', level,
                    'expires_at', to_char(NEW.expires_at AT TIME ZONE 'UTC', utc)
                )))
            ON CONFLICT (event_key) DO NOTHING;
        END LOOP;
    END IF;
    IF NEW.status IN ('cancelled', 'expired', 'failed') THEN
        key := NEW.reservation_id || '/ended';
        INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)
        VALUES (key, NEW.reservation_id, 'Reservation Ended', bus_event_detail(NEW, key,
            jsonb_build_object('ending', NEW.status, 'reason', NEW.failure_reason)))
        ON CONFLICT (event_key) DO NOTHING;
    END IF;
    -- Pod health: a new warning (an OOM kill counted, a restart, a pod or node in trouble).
    IF NEW.status = 'active' AND NEW.health_warning IS NOT NULL
       AND NEW.health_warning IS DISTINCT FROM OLD.health_warning THEN
        key := NEW.reservation_id || '/health/' || NEW.oom_count || '/' || NEW.pod_restarts
            || '/' || md5(NEW.health_warning);
        INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)
        VALUES (key, NEW.reservation_id, 'Reservation Health', bus_event_detail(NEW, key,
            jsonb_build_object(
                'warning', NEW.health_warning,
                'oom_count', NEW.oom_count,
                'pod_restarts', NEW.pod_restarts
            )))
        ON CONFLICT (event_key) DO NOTHING;
    END IF;
    -- Idle reclaim's warning (migration 0040): once per warning. A warning withdrawn (its
    -- GPUs used again) and a later one has a new warned_at, so it is a second event.
    IF NEW.status = 'active' AND NEW.idle_warning IS NOT NULL AND NEW.idle_warned_at IS NOT NULL
       AND NEW.idle_warned_at IS DISTINCT FROM OLD.idle_warned_at THEN
        key := NEW.reservation_id || '/idle/'
            || to_char(NEW.idle_warned_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
        INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)
        VALUES (key, NEW.reservation_id, 'Reservation Idle', bus_event_detail(NEW, key,
            jsonb_build_object(
                'idle_minutes', NEW.idle_timeout_minutes,
                'ends_at', to_char(coalesce(NEW.idle_ends_at, NEW.idle_warned_at)
                    AT TIME ZONE 'UTC', utc),
                'expires_at', to_char(NEW.expires_at AT TIME ZONE 'UTC', utc),
                'warning', NEW.idle_warning
            )))
        ON CONFLICT (event_key) DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER reservations_bus_events ON reservations;
CREATE TRIGGER reservations_bus_events
    AFTER UPDATE OF status, queue_position, estimated_start_at, warnings_sent, expires_at,
        health_warning, idle_warning, idle_warned_at
    ON reservations
    FOR EACH ROW EXECUTE FUNCTION record_bus_events();
REVOKE EXECUTE ON FUNCTION record_bus_events() FROM PUBLIC;
