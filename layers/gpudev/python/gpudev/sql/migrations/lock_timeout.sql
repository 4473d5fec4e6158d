SELECT set_config('lock_timeout', %(timeout)s, true)
