-- EBS tags now carry `tagged_as`: record it (NULL when it is the disk's name), and finish
-- the operation if it is still the current one (a newer request keeps its own status).
UPDATE disks SET
    tagged_name = nullif(%(tagged_as)s, disk_name),
    operation_status = CASE WHEN operation_id = %(operation_id)s THEN 'completed'
                            ELSE operation_status END
WHERE disk_id = %(disk_id)s
RETURNING *
