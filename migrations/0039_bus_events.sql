-- The public event bus (issue #35; docs/notifications.md, docs/decisions.md 2026-11-27
-- "Lifecycle events on a public bus, from an outbox"): what happens to a reservation is
-- written here, in the same statement as the row change that makes it happen, and the
-- event relay (gpudev/events/relay.py) puts it on the EventBridge bus `gpu-dev` after the
-- commit. So an event only exists for a committed change, and the lifecycle never waits on
-- EventBridge.
--
-- event_key names one event of one reservation (`<reservation id>/active`): the primary key
-- makes each written once, whatever path (or retry) changed the row again; it is the
-- event's `event_id` on the bus, so a consumer that receives it twice (the relay's mark
-- failing after its put) knows it. detail is the event's body, schema version 1
-- (layers/gpudev/python/gpudev/events/reservation-event.v1.schema.json).
CREATE TABLE bus_events (
    event_key       text PRIMARY KEY,
    reservation_id  uuid NOT NULL REFERENCES reservations (reservation_id) ON DELETE CASCADE,
    detail_type     text NOT NULL CONSTRAINT bus_events_detail_type_check CHECK (
        detail_type IN (
            'Reservation Queued', 'Reservation Active', 'Reservation Warning',
            'Reservation Ended', 'Reservation Health'
        )
    ),
    detail          jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    published_at    timestamptz,
    relay_attempts  integer NOT NULL DEFAULT 0
        CONSTRAINT bus_events_relay_attempts_check CHECK (relay_attempts >= 0),
    last_attempt_at timestamptz
);
-- The relay reads the oldest unpublished rows; published rows stay a while as the record
-- of what was announced (and so the key keeps a repeated change from announcing again).
CREATE INDEX bus_events_unpublished_idx ON bus_events (created_at) WHERE published_at IS NULL;

-- One event's body: what every event carries, and what this kind adds.
CREATE FUNCTION bus_event_detail(r reservations, event_key text, extra jsonb)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public
AS $$
    SELECT jsonb_build_object(
        'version', '1',
        'event_id', event_key,
        'reservation_id', r.reservation_id,
        'reservation_name', r.name,
        'user_id', r.user_id,
        'gpu_type', r.gpu_type,
        'gpu_count', r.gpu_count,
        'status', r.status,
        'occurred_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    ) || extra
$$;

-- Written by a trigger, so no path that changes a reservation (the API's cancel, the
-- lifecycle's tasks, the allocator, the sweeper, the availability updater's health) can
-- forget it. SECURITY DEFINER: those roles write events without a grant on the table.
CREATE FUNCTION record_bus_events() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    key text;
    level integer;
    utc text := 'YYYY-MM-DD"T"HH24:MI:SS"Z"';
BEGIN
    -- Queued: once, when it first waits behind others: a place in the queue and a start
    -- later than now (NULL: it never fits as things are). A request the allocator only has
    -- not granted yet (its start is now) is not told it queued.
    -- (A row that already qualified before this change has its event: the allocator's
    -- passes rewrite waiting rows often, and skip the insert's key lookup here.)
    IF NEW.status = 'queued' AND NEW.queue_position IS NOT NULL
       AND (NEW.estimated_start_at IS NULL OR NEW.estimated_start_at > now())
       AND NOT (
           OLD.status = 'queued' AND OLD.queue_position IS NOT NULL
           AND (OLD.estimated_start_at IS NULL OR OLD.estimated_start_at > now())
       ) THEN
        key := NEW.reservation_id || '/queued';
        INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)
        VALUES (key, NEW.reservation_id, 'Reservation Queued', bus_event_detail(NEW, key,
            jsonb_build_object(
                'queue_position', NEW.queue_position,
                'estimated_wait_minutes',
                ceil(extract(epoch FROM NEW.estimated_start_at - now()) / 60)::integer
            )))
        ON CONFLICT (event_key) DO NOTHING;
    END IF;
    IF NEW.status = 'active' AND OLD.status IS DISTINCT FROM 'active' THEN
        key := NEW.reservation_id || '/active';
        INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)
        VALUES (key, NEW.reservation_id, 'Reservation Active', bus_event_detail(NEW, key,
            jsonb_build_object(
                'ssh_command', NEW.ssh_command,
                'expires_at', to_char(NEW.expires_at AT TIME ZONE 'UTC', utc)
            )))
        ON CONFLICT (event_key) DO NOTHING;
    END IF;
    -- Warnings: each level once per expiry (an extension moves the expiry, and the
    -- lifecycle's warnings start over: so do these).
    IF NEW.status = 'active' THEN
        FOREACH level IN ARRAY NEW.warnings_sent LOOP
            CONTINUE WHEN level = ANY(OLD.warnings_sent)
                AND OLD.expires_at IS NOT DISTINCT FROM NEW.expires_at;
            key := NEW.reservation_id || '/warning/' || level || '/'
                || to_char(NEW.expires_at AT TIME ZONE 'UTC', utc);
            INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)
            VALUES (key, NEW.reservation_id, 'Reservation Warning', bus_event_detail(NEW, key,
                jsonb_build_object(
                    'minutes_left', level,
                    'expires_at', to_char(NEW.expires_at AT TIME ZONE 'UTC', utc)
                )))
            ON CONFLICT (event_key) DO NOTHING;
        END LOOP;
    END IF;
    IF NEW.status IN ('cancelled', 'expired', 'failed') THEN
        key := NEW.reservation_id || '/ended';
        INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)
        VALUES (key, NEW.reservation_id, 'Reservation Ended', bus_event_detail(NEW, key,
            jsonb_build_object('ending', NEW.status, 'reason', NEW.failure_reason)))
        ON CONFLICT (event_key) DO NOTHING;
    END IF;
    -- Pod health: a new warning (an OOM kill counted, a restart, a pod or node in trouble).
    IF NEW.status = 'active' AND NEW.health_warning IS NOT NULL
       AND NEW.health_warning IS DISTINCT FROM OLD.health_warning THEN
        key := NEW.reservation_id || '/health/' || NEW.oom_count || '/' || NEW.pod_restarts
            || '/' || md5(NEW.health_warning);
        INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)
        VALUES (key, NEW.reservation_id, 'Reservation Health', bus_event_detail(NEW, key,
            jsonb_build_object(
                'warning', NEW.health_warning,
                'oom_count', NEW.oom_count,
                'pod_restarts', NEW.pod_restarts
            )))
        ON CONFLICT (event_key) DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER reservations_bus_events
    AFTER UPDATE OF status, queue_position, estimated_start_at, warnings_sent, expires_at,
        health_warning
    ON reservations
    FOR EACH ROW EXECUTE FUNCTION record_bus_events();

REVOKE EXECUTE ON FUNCTION record_bus_events() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION bus_event_detail(reservations, text, jsonb) FROM PUBLIC;

-- The event relay logs in as the lifecycle: it locks a batch (FOR UPDATE needs an UPDATE
-- grant), marks what it put on the bus and counts failed attempts.
GRANT SELECT ON bus_events TO gpudev_lifecycle;
GRANT UPDATE (published_at, relay_attempts, last_attempt_at) ON bus_events TO gpudev_lifecycle;

-- Notifications (issue #35; docs/notifications.md): each user's contacts, kept server-side.
-- email_status: 'pending' until SES says the address is verified for sending (the link SES
-- mails when the API creates its identity), then 'verified'; nothing is mailed before.
-- The Slack webhook URL is a secret: stored only as a KMS ciphertext (encryption context:
-- the user), with a masked hint for display; the plain URL is never stored, returned or
-- logged. events: which kinds the user wants (all by default); warning_minutes: which
-- expiry warnings (the lifecycle's 30/15/5 by default).
CREATE TABLE notification_contacts (
    user_id            text PRIMARY KEY REFERENCES users (username) ON DELETE CASCADE,
    enabled            boolean NOT NULL DEFAULT true,
    email              text CONSTRAINT notification_contacts_email_check CHECK (
        email ~ '^[^@\s]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,63}$'
    ),
    email_status       text CONSTRAINT notification_contacts_email_status_check CHECK (
        email_status IN ('pending', 'verified')
    ),
    webhook_ciphertext bytea,
    webhook_hint       text,
    events             text[] NOT NULL
        DEFAULT '{queued,active,warning,ended,health}'
        CONSTRAINT notification_contacts_events_check
        CHECK (events <@ '{queued,active,warning,ended,health}'::text[]),
    warning_minutes    integer[] NOT NULL DEFAULT '{30,15,5}'
        CONSTRAINT notification_contacts_warning_minutes_check
        CHECK (warning_minutes <@ '{60,30,15,10,5,1}'::integer[]),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT notification_contacts_email_status_when_email_check
        CHECK ((email IS NULL) = (email_status IS NULL)),
    CONSTRAINT notification_contacts_webhook_hint_check
        CHECK ((webhook_ciphertext IS NULL) = (webhook_hint IS NULL))
);

-- What the notifier sent: one row per event and channel, claimed before the send, so a
-- repeated event (the relay putting it twice, Lambda's retries) sends nothing twice. The
-- per-user rate limit counts these rows.
CREATE TABLE notification_deliveries (
    event_id       text NOT NULL,
    channel        text NOT NULL
        CONSTRAINT notification_deliveries_channel_check CHECK (channel IN ('email', 'slack')),
    user_id        text NOT NULL,
    reservation_id uuid NOT NULL,
    detail_type    text NOT NULL,
    status         text NOT NULL DEFAULT 'sending'
        CONSTRAINT notification_deliveries_status_check
        CHECK (status IN ('sending', 'sent', 'failed', 'rate_limited')),
    attempts       integer NOT NULL DEFAULT 0,
    last_error     text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    claimed_at     timestamptz NOT NULL DEFAULT now(),
    sent_at        timestamptz,
    CONSTRAINT notification_deliveries_pkey PRIMARY KEY (event_id, channel)
);
CREATE INDEX notification_deliveries_user_idx ON notification_deliveries (user_id, created_at);

GRANT SELECT, INSERT, UPDATE, DELETE ON notification_contacts TO gpudev_api;
-- The notifier logs in as the lifecycle (docs/notifications.md): it reads contacts, records
-- an e-mail address SES verified meanwhile, and claims and settles its deliveries.
GRANT SELECT ON notification_contacts TO gpudev_lifecycle;
GRANT UPDATE (email_status) ON notification_contacts TO gpudev_lifecycle;
GRANT SELECT, INSERT, UPDATE ON notification_deliveries TO gpudev_lifecycle;
