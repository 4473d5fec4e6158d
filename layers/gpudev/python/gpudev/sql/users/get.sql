SELECT * FROM users WHERE username = %(username)s
