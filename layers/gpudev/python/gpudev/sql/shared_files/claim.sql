-- The user's row on the file system, made if missing (the primary key decides between two
-- first reservations at once); `locked` then reads it under a row lock.
INSERT INTO shared_file_access_points (user_id, file_system_id, client_token)
VALUES (%(user_id)s, %(file_system_id)s, %(client_token)s)
ON CONFLICT (user_id, file_system_id) DO NOTHING;
