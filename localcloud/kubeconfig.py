"""`.local/kubeconfig`: kubectl pointed at the local cloud's Kubernetes stand-in as
`aws eks update-kubeconfig` points it at EKS: the cluster's HTTPS endpoint and CA (what
DescribeCluster answers), and an `exec` credential plugin that presigns the same EKS token
our functions send (`python -m localcloud.eks_token`, with a local profile's credentials).

Written as JSON (a kubeconfig may be YAML or JSON), mode 0600 from the start."""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
from pathlib import Path

OPERATOR_PROFILE = "carol"  # the local operator (an SSO role session, like an admin's)


def kubeconfig(
    cluster_name: str,
    endpoint: str,
    ca_pem: bytes,
    region: str,
    credentials_file: Path,
    profile: str = OPERATOR_PROFILE,
) -> dict[str, object]:
    context = f"gpudev-local-{cluster_name}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {
                    "server": endpoint,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [
            {
                "name": context,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": sys.executable,
                        "args": [
                            "-m",
                            "localcloud.eks_token",
                            "--cluster-name",
                            cluster_name,
                            "--region",
                            region,
                            # As `aws eks update-kubeconfig --profile` writes it: a profile
                            # named on the command line wins over keys in the environment.
                            "--profile",
                            profile,
                        ],
                        "env": [
                            {"name": "AWS_SHARED_CREDENTIALS_FILE", "value": str(credentials_file)},
                        ],
                        "interactiveMode": "Never",
                        "provideClusterInfo": False,
                    }
                },
            }
        ],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
    }


def write_kubeconfig(path: Path, config: dict[str, object]) -> Path:
    """Written to a new file, created 0600 (mkstemp), then renamed over `path`: an earlier
    file's mode never applies to the new content, and whoever opened it reads none of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w") as file:
            json.dump(config, file, indent=2)
            file.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
