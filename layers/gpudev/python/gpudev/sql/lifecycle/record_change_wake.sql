-- The reservation's execution was just woken for a change, or applied one: later changes
-- within the bound are coalesced (lifecycle/wakes.py).
INSERT INTO change_wakes (reservation_id, woken_at)
VALUES (%(reservation_id)s, now())
ON CONFLICT (reservation_id) DO UPDATE SET woken_at = now()
