-- Per-principal request buckets (the API's fair share, docs/security.md "Limits") and
-- the last change a reservation's execution applied (the bound on its change wakes).
--
-- api_request_buckets: a token bucket per canonical principal, taken by one statement per
-- request (ratelimit/take.sql). A row per principal that ever called; a few hundred bytes
-- each. fillfactor 50: every request updates its row, so keep the update HOT.
CREATE TABLE api_request_buckets (
    principal_arn text PRIMARY KEY,
    tokens double precision NOT NULL,
    refilled_at timestamptz NOT NULL,
    taken boolean NOT NULL  -- whether the last request took a token
) WITH (fillfactor = 50);
GRANT SELECT, INSERT, UPDATE ON api_request_buckets TO gpudev_api;

-- change_wakes: when the reservation's execution last applied a change or was woken for
-- one (lifecycle/consumer.py claims, lifecycle/active.py records). No foreign key: the purge
-- of old reservations need not know this table; a row is 40 bytes.
CREATE TABLE change_wakes (
    reservation_id uuid PRIMARY KEY,
    woken_at timestamptz NOT NULL
);
GRANT SELECT, INSERT, UPDATE ON change_wakes TO gpudev_lifecycle;
