import socket
from pathlib import Path

import pytest

from localcloud.options import Ports
from localcloud.postgres import PortInUse, free_port
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


def test_one_port_for_two_servers_is_a_clear_error_before_anything_starts(tmp_path: Path):
    port = free_port()
    cloud = LocalCloud(tmp_path, Options(ports=Ports(aws=port, sqs=port)))
    with pytest.raises(PortInUse, match=f"sqs port \\(--sqs-port\\) {port} is also the aws port"):
        cloud.start()
    assert cloud.aws is None and cloud.sqs_process is None
