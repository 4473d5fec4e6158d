INSERT INTO reconciler_runs (reconciler, invoked_by)
VALUES (%(reconciler)s, %(invoked_by)s)
RETURNING *
