-- One run's findings, one statement: only rows still active, only when something changed.
-- An ending, once recorded, is kept (the execution ends the reservation with it).
-- A health warning set, changed or cleared (OOM kills, restarts, trouble) is also an entry
-- in the reservation's timeline (kind health), and so is each OOM kill (oom) and each rise
-- in the restart count (restart); `old` is the row as it was before.
WITH changed AS (
    UPDATE reservations AS r SET
        oom_count = r.oom_count + f.new_ooms,
        last_oom_at = COALESCE(f.last_oom_at, r.last_oom_at),
        pod_restarts = f.pod_restarts,
        health_warning = f.health_warning,
        health_ending = COALESCE(r.health_ending, f.health_ending)
    FROM unnest(
        %(reservation_id)s::uuid[], %(new_ooms)s::integer[], %(last_oom_at)s::timestamptz[],
        %(pod_restarts)s::integer[], %(health_warning)s::text[], %(health_ending)s::text[]
    ) AS f(reservation_id, new_ooms, last_oom_at, pod_restarts, health_warning, health_ending),
    reservations AS old
    WHERE r.reservation_id = f.reservation_id
      AND old.reservation_id = r.reservation_id
      AND r.status = 'active'
    RETURNING r.reservation_id, r.task_token, r.health_ending, r.status,
              r.health_warning, old.health_warning AS warning_before,
              f.new_ooms, r.oom_count, r.last_oom_at,
              r.pod_restarts, old.pod_restarts AS restarts_before
), recorded AS (
    INSERT INTO reservation_events (reservation_id, from_status, to_status, detail, kind)
    SELECT reservation_id, status, status,
           coalesce('warning: ' || health_warning, 'the health warning cleared'), 'health'
    FROM changed
    WHERE health_warning IS DISTINCT FROM warning_before
), counted AS (
    -- Each OOM kill (by its time) and each rise in the restart count (by the count) once:
    -- reservation_events_once (migration 0036) holds a repeated run to nothing.
    INSERT INTO reservation_events (reservation_id, from_status, to_status, detail, kind,
                                    event_key)
    SELECT reservation_id, status, status,
           'a container was OOM-killed (out of memory) at '
               || to_char(last_oom_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC; '
               || oom_count || ' in all',
           'oom', 'oom:' || to_char(last_oom_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')
    FROM changed WHERE new_ooms > 0
    UNION ALL
    SELECT reservation_id, status, status,
           'the pod''s containers restarted: ' || pod_restarts || ' restart(s) in all (was '
               || restarts_before || ')',
           'restart', 'restarts:' || pod_restarts
    FROM changed WHERE pod_restarts > restarts_before
    ON CONFLICT ON CONSTRAINT reservation_events_once DO NOTHING
)
SELECT reservation_id, task_token, health_ending FROM changed
