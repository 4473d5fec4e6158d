-- A user's notification contacts, written whole (the service merged the request into what
-- was saved), in one statement.
INSERT INTO notification_contacts AS c (
    user_id, enabled, email, email_status, webhook_ciphertext, webhook_hint, events,
    warning_minutes
) VALUES (
    %(user_id)s, %(enabled)s, %(email)s, %(email_status)s, %(webhook_ciphertext)s,
    %(webhook_hint)s, %(events)s, %(warning_minutes)s
)
ON CONFLICT (user_id) DO UPDATE SET
    enabled = EXCLUDED.enabled,
    email = EXCLUDED.email,
    email_status = EXCLUDED.email_status,
    webhook_ciphertext = EXCLUDED.webhook_ciphertext,
    webhook_hint = EXCLUDED.webhook_hint,
    events = EXCLUDED.events,
    warning_minutes = EXCLUDED.warning_minutes,
    updated_at = now()
RETURNING user_id, enabled, email, email_status, webhook_ciphertext, webhook_hint, events,
          warning_minutes
