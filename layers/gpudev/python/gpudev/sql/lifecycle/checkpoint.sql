-- What a checkpoint applied: the expiry from the current total hours, the warnings sent
-- since the last extension, Jupyter's address, and the change generation now in the pod.
UPDATE reservations SET
    expires_at = launched_at + make_interval(secs => duration_hours * %(seconds_per_hour)s),
    warnings_sent = %(warnings_sent)s,
    warning_text = %(warning_text)s,
    jupyter_url = %(jupyter_url)s,
    jupyter_port = %(jupyter_port)s,
    keyless_users = %(keyless_users)s,
    applied_generation = greatest(applied_generation, %(generation)s)
WHERE reservation_id = %(reservation_id)s AND status = 'active'
RETURNING *
