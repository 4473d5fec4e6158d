-- The owner sets a live reservation's idle timeout (reserve, edit): NULL is never. Its
-- idle clock restarts and a warning it had is withdrawn; a reservation whose idle ending is
-- already recorded is left to end (no row).
UPDATE reservations SET
    idle_timeout_minutes = %(minutes)s,
    idle_active_at = now(),
    idle_warning = NULL,
    idle_warned_at = NULL,
    idle_ends_at = NULL
WHERE reservation_id = %(reservation_id)s
  AND status NOT IN ('cancelled', 'expired', 'failed')
  AND idle_ending IS NULL
RETURNING *
