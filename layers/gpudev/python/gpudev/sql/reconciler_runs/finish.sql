UPDATE reconciler_runs SET
    finished_at = now(), outcome = %(outcome)s, statistics = %(statistics)s, error = %(error)s
WHERE run_id = %(run_id)s
RETURNING *
