-- A cancel is a request first (recorded by the API, carried out by the reservation's
-- execution): when it was asked for, so a repeat is recognised and not re-queued.
ALTER TABLE reservations ADD COLUMN cancel_requested_at timestamptz;
