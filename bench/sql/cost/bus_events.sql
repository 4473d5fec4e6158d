-- The lifecycle's events per reservation (migrations/0039): one PutEvents entry each.
SELECT reservation_id, count(*) FROM bus_events GROUP BY reservation_id
