-- Usage accounting (issue #17 items 1-2), from what the database already records.
--
-- GPU-hours are held from the grant (`granted_at`; `launched_at` for a row without one) to
-- the end (`reservation_ended`; `as_of` for one still live), times `gpu_count` (a
-- multinode reservation's count is already the sum over its nodes). A reservation never
-- granted (cancelled while queued) held nothing. Every report is clipped to [since, until)
-- and split into UTC days: the functions run with TimeZone UTC, whatever the session's.

-- Capacity over time: one row each time a type's total changes (a step function), written by
-- a trigger on the availability updater's one UPDATE, so no code path can forget it.
CREATE TABLE gpu_capacity_history (
    gpu_type   text NOT NULL REFERENCES gpu_types (gpu_type),
    at         timestamptz NOT NULL DEFAULT now(),
    total_gpus integer NOT NULL CHECK (total_gpus >= 0),
    CONSTRAINT gpu_capacity_history_pkey PRIMARY KEY (gpu_type, at)
);

-- SECURITY DEFINER: the updater's role writes the history without a grant of its own.
CREATE FUNCTION record_gpu_capacity() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.total_cluster_gpus IS DISTINCT FROM OLD.total_cluster_gpus THEN
        INSERT INTO gpu_capacity_history (gpu_type, at, total_gpus)
        VALUES (NEW.gpu_type, now(), NEW.total_cluster_gpus)
        ON CONFLICT ON CONSTRAINT gpu_capacity_history_pkey
        DO UPDATE SET total_gpus = EXCLUDED.total_gpus;
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER gpu_types_capacity_history AFTER INSERT OR UPDATE OF total_cluster_gpus
    ON gpu_types FOR EACH ROW EXECUTE FUNCTION record_gpu_capacity();

-- What the history knew when it started: today's totals.
INSERT INTO gpu_capacity_history (gpu_type, at, total_gpus)
SELECT gpu_type, now(), total_cluster_gpus FROM gpu_types;

-- An operator's force-cancel carries its reason; the lifecycle's final status records it
-- (lifecycle/end.sql), so it lands in the status history.
ALTER TABLE reservations ADD COLUMN cancel_reason text
    CONSTRAINT reservations_cancel_reason_check CHECK (length(cancel_reason) BETWEEN 1 AND 500);

-- GPU-hours by user, type and UTC day.
CREATE FUNCTION usage_gpu_hours(
    since timestamptz, until timestamptz, as_of timestamptz, only_user text
) RETURNS TABLE (username text, gpu_type text, day date, gpu_hours double precision,
                 reservations bigint)
LANGUAGE sql STABLE SET TimeZone = 'UTC' AS $$
    WITH held AS (
        SELECT r.reservation_id, r.user_id, r.gpu_type, r.gpu_count,
               greatest(coalesce(r.granted_at, r.launched_at), since) AS lo,
               least(coalesce(r.reservation_ended, as_of), until, as_of) AS hi
        FROM reservations r
        WHERE coalesce(r.granted_at, r.launched_at) < least(until, as_of)
          AND (r.reservation_ended IS NULL OR r.reservation_ended > since)
          AND r.gpu_count > 0
          AND (only_user IS NULL OR r.user_id = only_user)
    ), pieces AS (
        SELECT h.reservation_id, h.user_id, h.gpu_type, d.day::date AS day,
               h.gpu_count * extract(epoch FROM
                   least(h.hi, d.day + interval '1 day') - greatest(h.lo, d.day)
               ) / 3600 AS gpu_hours
        FROM held h
        CROSS JOIN LATERAL generate_series(
            date_trunc('day', h.lo), h.hi - interval '1 microsecond', interval '1 day'
        ) AS d (day)
        WHERE h.hi > h.lo
    )
    SELECT user_id, gpu_type, day, sum(gpu_hours)::double precision,
           count(DISTINCT reservation_id)
    FROM pieces
    GROUP BY user_id, gpu_type, day
$$;

-- Queue wait by type, for reservations submitted in the window: creation to grant.
CREATE FUNCTION usage_queue_waits(
    since timestamptz, until timestamptz, as_of timestamptz, only_user text
) RETURNS TABLE (gpu_type text, granted bigint, still_waiting bigint, never_granted bigint,
                 p50_minutes double precision, p90_minutes double precision,
                 max_minutes double precision)
LANGUAGE sql STABLE SET TimeZone = 'UTC' AS $$
    WITH submitted AS (
        SELECT r.gpu_type, r.reservation_ended,
               extract(epoch FROM coalesce(r.granted_at, r.launched_at) - r.created_at) / 60
                   AS wait_minutes
        FROM reservations r
        WHERE r.created_at >= since AND r.created_at < least(until, as_of)
          AND (only_user IS NULL OR r.user_id = only_user)
    )
    SELECT gpu_type,
           count(wait_minutes),
           count(*) FILTER (WHERE wait_minutes IS NULL AND reservation_ended IS NULL),
           count(*) FILTER (WHERE wait_minutes IS NULL AND reservation_ended IS NOT NULL),
           percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_minutes),
           percentile_cont(0.9) WITHIN GROUP (ORDER BY wait_minutes),
           max(wait_minutes)::double precision
    FROM submitted
    GROUP BY gpu_type
$$;

-- Reservations that ended in the window, by outcome and reason (a failure's reason, a
-- cancel's: the user, stale in the queue, or an operator's recorded reason).
CREATE FUNCTION usage_outcomes(
    since timestamptz, until timestamptz, as_of timestamptz, only_user text
) RETURNS TABLE (outcome text, reason text, while_queued boolean, reservations bigint)
LANGUAGE sql STABLE SET TimeZone = 'UTC' AS $$
    SELECT r.status,
           CASE WHEN r.status = 'failed' THEN r.failure_reason
                WHEN r.status = 'cancelled' THEN r.current_detailed_status END,
           coalesce(r.granted_at, r.launched_at) IS NULL,
           count(*)
    FROM reservations r
    WHERE r.reservation_ended >= since AND r.reservation_ended < least(until, as_of)
      AND (only_user IS NULL OR r.user_id = only_user)
    GROUP BY 1, 2, 3
$$;

-- The fleet: GPU-hours held against GPU-hours of capacity (the history's step function).
CREATE FUNCTION usage_fleet_utilisation(since timestamptz, until timestamptz, as_of timestamptz)
RETURNS TABLE (gpu_type text, held_gpu_hours double precision,
               capacity_gpu_hours double precision, utilisation double precision)
LANGUAGE sql STABLE SET TimeZone = 'UTC' AS $$
    WITH steps AS (
        SELECT h.gpu_type, h.total_gpus, h.at AS lo,
               lead(h.at, 1, as_of) OVER (PARTITION BY h.gpu_type ORDER BY h.at) AS hi
        FROM gpu_capacity_history h
        WHERE h.at < least(until, as_of)
    ), capacity AS (
        SELECT gpu_type, sum(total_gpus * extract(epoch FROM
                   least(hi, until, as_of) - greatest(lo, since)) / 3600) AS gpu_hours
        FROM steps
        WHERE least(hi, until, as_of) > greatest(lo, since)
        GROUP BY gpu_type
    ), held AS (
        SELECT gpu_type, sum(gpu_hours) AS gpu_hours
        FROM usage_gpu_hours(since, until, as_of, NULL)
        GROUP BY gpu_type
    )
    SELECT coalesce(c.gpu_type, h.gpu_type),
           coalesce(h.gpu_hours, 0)::double precision,
           coalesce(c.gpu_hours, 0)::double precision,
           (h.gpu_hours / nullif(c.gpu_hours, 0))::double precision
    FROM capacity c
    FULL JOIN held h ON h.gpu_type = c.gpu_type
$$;

-- The API reads reports and records an operator's reason with the cancel request.
GRANT SELECT ON gpu_capacity_history TO gpudev_api;
GRANT UPDATE (cancel_reason) ON reservations TO gpudev_api;
