-- One run's idle decisions, one statement (under utilisation/try_lock.sql), for rows
-- still active: activity restarts the idle clock; a warning is set or cleared; an ending,
-- once recorded, is kept. A warning set or cleared is a timeline entry (kind health, as the
-- pod's health warnings; its detail starts with "idle"), written once: only when the row's
-- warning changed in this statement. `old` is the row as it was before.
-- A change applies only to a row whose idle state is still what the plan read (its timeout,
-- idle clock and warning): the candidates are read without a lock, and the owner may have
-- set `--idle-timeout none` (set_idle_timeout.sql restarts the clock and clears the
-- warning) in between. Such a row is skipped; the next run judges it again.
-- A new warning is also an event on the bus (migration 0044's trigger), with idle_ends_at.
WITH change AS (
    SELECT *
    FROM unnest(
        %(reservation_id)s::uuid[], %(active_at)s::timestamptz[], %(warning)s::text[],
        %(warned_at)s::timestamptz[], %(ends_at)s::timestamptz[], %(clear_warning)s::boolean[],
        %(ending)s::text[], %(seen_timeout_minutes)s::integer[],
        %(seen_active_at)s::timestamptz[], %(seen_warned_at)s::timestamptz[]
    ) AS c(reservation_id, active_at, warning, warned_at, ends_at, clear_warning, ending,
           seen_timeout_minutes, seen_active_at, seen_warned_at)
), changed AS (
    UPDATE reservations AS r SET
        idle_active_at = coalesce(c.active_at, r.idle_active_at),
        idle_warning = CASE
            WHEN c.clear_warning THEN NULL ELSE coalesce(c.warning, r.idle_warning) END,
        idle_warned_at = CASE
            WHEN c.clear_warning THEN NULL ELSE coalesce(c.warned_at, r.idle_warned_at) END,
        idle_ends_at = CASE
            WHEN c.clear_warning THEN NULL ELSE coalesce(c.ends_at, r.idle_ends_at) END,
        idle_ending = coalesce(r.idle_ending, c.ending)
    FROM change AS c, reservations AS old
    WHERE r.reservation_id = c.reservation_id
      AND old.reservation_id = r.reservation_id
      AND r.status = 'active'
      AND r.idle_timeout_minutes IS NOT DISTINCT FROM c.seen_timeout_minutes
      AND r.idle_active_at IS NOT DISTINCT FROM c.seen_active_at
      AND r.idle_warned_at IS NOT DISTINCT FROM c.seen_warned_at
    RETURNING r.reservation_id, r.task_token, r.status, r.idle_warning, r.idle_ending,
              old.idle_warning AS warning_before, old.idle_ending AS ending_before
), recorded AS (
    INSERT INTO reservation_events (reservation_id, from_status, to_status, detail, kind)
    SELECT reservation_id, status, status,
           CASE
               WHEN idle_ending IS NOT NULL AND ending_before IS NULL
                   THEN 'idle: ending it (' || idle_ending || ')'
               WHEN idle_warning IS NOT NULL THEN 'warning: ' || idle_warning
               ELSE 'idle: the warning cleared (its GPUs are in use again)'
           END,
           'health'
    FROM changed
    WHERE idle_warning IS DISTINCT FROM warning_before
       OR (idle_ending IS NOT NULL AND ending_before IS NULL)
)
SELECT reservation_id, task_token, idle_ending,
       idle_warning IS DISTINCT FROM warning_before AS warning_changed
FROM changed
