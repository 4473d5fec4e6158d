-- A run that ended as soon as it began (skipped, or failed before it could start work).
INSERT INTO reconciler_runs (reconciler, invoked_by, finished_at, outcome, error)
VALUES (%(reconciler)s, %(invoked_by)s, now(), %(outcome)s, %(error)s)
RETURNING *
