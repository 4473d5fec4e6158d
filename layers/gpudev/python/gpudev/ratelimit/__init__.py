"""Each principal's fair share of the API: a token bucket per canonical principal, kept in
the database so it holds across every Lambda execution environment (an in-memory bucket
would give each environment its own). One statement per request (`sql/ratelimit/take.sql`),
taken after the caller's checks and before anything else is read; an empty bucket is
`RateLimited` (429 with `Retry-After`). docs/decisions.md, 2026-11-27 "Per-principal rate
limit"."""
