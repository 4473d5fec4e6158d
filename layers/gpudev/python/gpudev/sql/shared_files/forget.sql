-- The recorded access point is gone from EFS (deleted by hand): the row forgets it and takes
-- a fresh client token, so the next CreateAccessPoint makes a new one. Only the id that was
-- found gone is forgotten.
UPDATE shared_file_access_points
SET access_point_id = NULL, ready_at = NULL, client_token = %(client_token)s
WHERE user_id = %(user_id)s
  AND file_system_id = %(file_system_id)s
  AND access_point_id = %(gone)s
RETURNING user_id, file_system_id, client_token, access_point_id, created_at, ready_at;
