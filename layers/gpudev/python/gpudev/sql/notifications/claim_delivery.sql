-- Claim one channel's send of one event: a new row, or one whose send failed (Lambda's
-- retry), or one claimed long ago by a send that never settled (its environment died).
-- No row back: sent already, rate-limited, or being sent by another invocation right now.
INSERT INTO notification_deliveries AS d (
    event_id, channel, user_id, reservation_id, detail_type, attempts
) VALUES (
    %(event_id)s, %(channel)s, %(user_id)s, %(reservation_id)s, %(detail_type)s, 1
)
ON CONFLICT (event_id, channel) DO UPDATE SET
    status = 'sending', attempts = d.attempts + 1, claimed_at = now()
WHERE d.status = 'failed'
   OR (d.status = 'sending' AND d.claimed_at < now() - make_interval(secs => %(stale_seconds)s))
RETURNING d.attempts
