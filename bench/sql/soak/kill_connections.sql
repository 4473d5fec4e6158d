-- The fault "database connections killed": every client backend of the cloud's database
-- but the soak's own.
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
  AND application_name <> 'soak' AND backend_type = 'client backend'
