UPDATE users SET github_username = %(github_username)s
WHERE username = %(username)s
RETURNING *
