-- One run's findings, one statement: only rows still active, only when something changed.
-- An ending, once recorded, is kept (the execution ends the reservation with it).
-- A health warning set, changed or cleared (OOM kills, restarts, trouble) is also an entry
-- in the reservation's timeline (kind health); `old` is the row as it was before.
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
              r.health_warning, old.health_warning AS warning_before
), recorded AS (
    INSERT INTO reservation_events (reservation_id, from_status, to_status, detail, kind)
    SELECT reservation_id, status, status,
           coalesce('warning: ' || health_warning, 'the health warning cleared'), 'health'
    FROM changed
    WHERE health_warning IS DISTINCT FROM warning_before
)
SELECT reservation_id, task_token, health_ending FROM changed
