"""Notifications (docs/notifications.md): each user's contacts and preferences (schemas.py,
rules.py, service.py behind `GET/PUT /v1/me/notifications`), the webhook URL kept as a KMS
ciphertext (vault.py), and the notifier, a target of the bus gpu-dev: the message in the
user's words (messages.py), each channel's send with bounded time and retries (channels.py)
and each (event, channel) sent once within a per-user rate (delivery.py)."""
