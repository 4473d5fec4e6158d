-- The access point EFS made (or gave back) for the row's client token. Only ever set once:
-- a different id for a row that has one matches nothing.
UPDATE shared_file_access_points
SET access_point_id = %(access_point_id)s, ready_at = now()
WHERE user_id = %(user_id)s
  AND file_system_id = %(file_system_id)s
  AND (access_point_id IS NULL OR access_point_id = %(access_point_id)s)
RETURNING user_id, file_system_id, client_token, access_point_id, created_at, ready_at;
