-- How many notifications the user was sent within the window (the per-user rate limit).
SELECT count(*)::integer
FROM notification_deliveries
WHERE user_id = %(user_id)s AND status = 'sent'
  AND sent_at > now() - make_interval(secs => %(window_seconds)s)
