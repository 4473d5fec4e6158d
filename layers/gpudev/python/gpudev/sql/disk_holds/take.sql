-- A granted reservation takes its named disk: one statement, only when nobody holds it (or
-- it already does: a retried task). Under concurrency the row lock serialises two takers and
-- the second re-checks `reservation_id IS NULL` against the first's commit, so exactly one
-- gets it; migration 0011's single holder column makes two holders impossible anyway.
UPDATE disks SET reservation_id = %(reservation_id)s, last_used = now(), lifecycle_error = NULL
WHERE user_id = %(user_id)s AND disk_name = %(disk_name)s AND NOT is_deleted
  AND (reservation_id IS NULL OR reservation_id = %(reservation_id)s)
RETURNING *
