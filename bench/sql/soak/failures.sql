-- The most frequent failure reasons.
SELECT left(failure_reason, 110), count(*) FROM reservations
WHERE status = 'failed' GROUP BY 1 ORDER BY 2 DESC LIMIT 5
