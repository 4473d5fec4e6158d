"""What an API process of the local cloud runs with (`--api-processes`): the cloud's
environment for its functions, with the function's own deployed pool size and limits."""

from __future__ import annotations

from cdk_app.declaration import DEPLOYMENT
from localcloud.processes import function_environment


def test_an_api_process_gets_the_clouds_environment_with_the_api_groups_own_limits():
    api = DEPLOYMENT.function(DEPLOYMENT.api.function)
    assert api.database is not None
    cloud = {
        "DATABASE_URL": "postgresql://local/gpudev",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:5000",
        "DB_POOL_MAX_SIZE": "16",  # the shared process's
        "DB_STATEMENT_TIMEOUT_MS": "999999",  # the most lenient group's
        "DB_LOCK_TIMEOUT_MS": "999999",
    }
    environment = function_environment(api, cloud)
    assert environment["DATABASE_URL"] == cloud["DATABASE_URL"]
    assert environment["AWS_ENDPOINT_URL"] == cloud["AWS_ENDPOINT_URL"]
    assert "DB_POOL_MAX_SIZE" not in environment  # the settings' default, as deployed
    assert environment["DB_STATEMENT_TIMEOUT_MS"] == str(api.database.statement_timeout_ms)
    assert environment["DB_LOCK_TIMEOUT_MS"] == str(api.database.lock_timeout_ms)
    assert environment["DB_APPLICATION_NAME"] == "gpudev-api"  # who holds a connection
    assert cloud["DB_POOL_MAX_SIZE"] == "16"  # the cloud's own is left as it was
