-- What the sweeper repaired over the run, and its failed runs.
SELECT coalesce(sum((statistics->>'objects_deleted')::int), 0),
       coalesce(sum((statistics->>'reservations_ended')::int), 0),
       coalesce(sum((statistics->>'create_jobs_resent')::int), 0),
       count(*) FILTER (WHERE outcome = 'failed')
FROM reconciler_runs WHERE reconciler = 'sweeper'
