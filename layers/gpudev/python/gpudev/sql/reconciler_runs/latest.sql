SELECT * FROM reconciler_runs
WHERE reconciler = %(reconciler)s
ORDER BY started_at DESC, run_id DESC
LIMIT 1
