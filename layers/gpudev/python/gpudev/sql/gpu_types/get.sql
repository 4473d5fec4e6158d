SELECT * FROM gpu_types WHERE gpu_type = %(gpu_type)s
