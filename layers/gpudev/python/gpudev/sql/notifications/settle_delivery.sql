-- How one channel's send of one event ended: sent, failed (tried again by Lambda's retry) or
-- rate-limited (never sent).
UPDATE notification_deliveries SET
    status = %(status)s,
    last_error = %(error)s,
    sent_at = CASE WHEN %(status)s = 'sent' THEN now() END
WHERE event_id = %(event_id)s AND channel = %(channel)s
