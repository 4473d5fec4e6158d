-- A user's notification contacts (NULL: none saved; the defaults apply).
SELECT user_id, enabled, email, email_status, webhook_ciphertext, webhook_hint, events,
       warning_minutes
FROM notification_contacts
WHERE user_id = %(user_id)s
