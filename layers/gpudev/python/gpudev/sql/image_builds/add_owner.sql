-- The caller uploaded or built this context (`gpu-dev image list` shows it).
INSERT INTO image_build_owners (context_hash, user_id) VALUES (%(context_hash)s, %(username)s)
ON CONFLICT (user_id, context_hash) DO NOTHING
