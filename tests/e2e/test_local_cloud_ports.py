import socket
from pathlib import Path

import pytest

from localcloud.options import Ports
from localcloud.postgres import PortInUse
from localcloud.stack import LocalCloud, Options


def test_a_port_in_use_is_a_clear_error_and_nothing_is_left_running(tmp_path: Path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cloud = LocalCloud(tmp_path, Options(ports=Ports(api=port)))
        with pytest.raises(PortInUse, match=f"api port \\(--api-port\\) {port} .* in use"):
            cloud.start()
    assert cloud.aws is None and cloud.gateway is None
