SELECT extract(epoch FROM min(created_at)) FROM reservations
