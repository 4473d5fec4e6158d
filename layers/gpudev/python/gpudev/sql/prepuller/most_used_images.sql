-- The images reservations asked for most in the last %(days)s days (`reserve --image`; NULL
-- is the deployment's default image, which the pre-puller always pulls first), most used
-- first, ties by the latest use, at most %(limit)s of them. What the pod runs (`image_pull`:
-- a digest), so a pre-pulled image is exactly the one a dev pod starts from. Reads the
-- partial index of migration 0047 (created_at, image_pull WHERE image_pull IS NOT NULL).
-- Ranked by how many users asked for it first, then by uses: one user's many reservations
-- count as one user, so they cannot push their image onto every node ahead of the team's.
SELECT image_pull, count(*) AS uses
FROM reservations
WHERE image_pull IS NOT NULL
  AND created_at > now() - make_interval(days => %(days)s::integer)
GROUP BY image_pull
ORDER BY count(DISTINCT user_id) DESC, uses DESC, max(created_at) DESC, image_pull
LIMIT %(limit)s;
