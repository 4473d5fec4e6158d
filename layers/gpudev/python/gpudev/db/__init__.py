"""PostgreSQL access: the connection pool, named SQL, migrations and repositories."""
