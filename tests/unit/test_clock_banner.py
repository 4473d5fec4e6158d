"""`make run`'s banner states the one clock unit on screen (issue #16 item 6)."""

from __future__ import annotations

from localcloud.__main__ import clock_line


def test_a_compressed_clock_is_stated_with_its_unit():
    line = clock_line(60.0)
    assert line.startswith("COMPRESSED: a clock hour lasts 60 s (a clock minute 1 s)")
    assert "clock minutes/hours" in line and "wall-clock UTC" in line


def test_real_time_says_so():
    assert clock_line(3600.0) == "real time: an hour lasts an hour"


def test_the_banner_says_how_to_point_the_cli_at_the_cloud(tmp_path):
    """A new user reads the banner, not the README: it gives the `gpu-dev` alias with this
    cloud's API URL and region, and the GitHub-user setting every reservation needs."""
    from types import SimpleNamespace

    from localcloud.__main__ import banner

    stack = {
        "api_url": "http://127.0.0.1:18650",
        "aws_endpoint_url": "http://127.0.0.1:18651",
        "sqs_endpoint_url": "http://127.0.0.1:18653",
        "region": "us-east-2",
        "kubernetes_url": "https://127.0.0.1:18652",
        "kubeconfig": str(tmp_path / "kubeconfig"),
        "eks_cluster_name": "pytorch-gpu-dev-cluster",
        "database_url": "postgresql://postgres@127.0.0.1:1/gpudev",
        "credentials_file": str(tmp_path / "credentials"),
        "profiles": ["alice", "bob", "carol"],
    }
    options = SimpleNamespace(seconds_per_hour=60.0, database_url=None)
    cloud = SimpleNamespace(describe=lambda: stack, options=options)
    text = banner(cloud, tmp_path)  # type: ignore[arg-type]
    # A restart keeps nothing (docs/architecture.md, "Every start is clean").
    assert "state                     NEW: every start is clean" in text
    assert (
        'alias gpu-dev=".venv/bin/gpu-dev --api-url http://127.0.0.1:18650 --region us-east-2"'
        in text
    )
    assert "gpu-dev config set github_user" in text
    # ... and kubectl, pointed at the stand-in as at EKS (issue #31 item 3).
    assert f"KUBECONFIG={tmp_path / 'kubeconfig'} kubectl get nodes -o wide" in text
