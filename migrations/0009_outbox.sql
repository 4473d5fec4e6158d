-- The transactional outbox: the API writes a job here in the same statement as the row
-- change it announces, sends it to the jobs queue only after the transaction commits, and
-- deletes it once sent. A row still here a few seconds later (a send that failed, a crash
-- between commit and send) is sent by the sweeper's relay (sweeper/relay_*.sql), which
-- deletes it too. A job therefore only ever exists for a committed change.
CREATE TABLE outbox (
    outbox_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    payload jsonb NOT NULL CONSTRAINT outbox_payload_kind_check CHECK (payload ? 'kind'),
    created_at timestamptz NOT NULL DEFAULT now(),
    relay_attempts integer NOT NULL DEFAULT 0
        CONSTRAINT outbox_relay_attempts_check CHECK (relay_attempts >= 0),
    last_attempt_at timestamptz
);

-- The relay reads the oldest rows first; the table is near empty in steady state.
CREATE INDEX outbox_created_at_idx ON outbox (created_at);

-- The API inserts (RETURNING the id and payload) and deletes what it sent itself.
GRANT SELECT (outbox_id, payload), INSERT, DELETE ON outbox TO gpudev_api;
-- The sweeper logs in as the lifecycle: it locks a batch (FOR UPDATE needs an UPDATE grant),
-- counts failed attempts and deletes what it sent.
GRANT SELECT, DELETE ON outbox TO gpudev_lifecycle;
GRANT UPDATE (relay_attempts, last_attempt_at) ON outbox TO gpudev_lifecycle;
