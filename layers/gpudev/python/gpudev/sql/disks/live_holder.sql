-- The live reservation that names a disk (migrations/0017 disk_live_holder), if any.
SELECT disk_live_holder(%(user_id)s, %(disk_name)s)
