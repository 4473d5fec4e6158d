"""The cluster's EKS access entries: which IAM principals may use the cluster, as which
Kubernetes user and groups, and with which EKS access policies.

EKS maps an authenticated principal through the entry of its canonical ARN: an STS
assumed-role session (`arn:aws:sts::<account>:assumed-role/<role>/<session>`) is its role
(`arn:aws:iam::<account>:role/<role>`, the path dropped, as aws-iam-authenticator's
`arn.Canonicalize` does). A STANDARD entry's default username is the user's ARN, or for a
role `arn:aws:sts::<account>:assumed-role/<role>/{{SessionName}}` with the session filled
in; its groups are the entry's Kubernetes groups and `system:authenticated`. The
AmazonEKSClusterAdminPolicy access policy (cluster scope) lets the principal do anything,
through EKS's own authorizer rather than a Kubernetes group. A principal without an entry is
not a user of the cluster at all (401).

The local cloud builds the table from the same declarations the CDK stack turns into
`AWS::EKS::AccessEntry` resources (`localcloud/cluster_access.py`): moto's EKS has no
access entries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from localcloud.kubernetes.rbac import AUTHENTICATED

CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/(?P<session>.+)$"
)
_ROLE = re.compile(
    r"^arn:(?P<partition>[^:]+):iam::(?P<account>\d{12}):role/(?:.*/)?(?P<role>[^/]+)$"
)


@dataclass(frozen=True)
class UserInfo:
    """A Kubernetes user (the authenticator's `user.Info`)."""

    username: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    access_policies: tuple[str, ...] = ()  # EKS access policies' names, cluster scope

    @property
    def cluster_admin(self) -> bool:
        return CLUSTER_ADMIN_POLICY in self.access_policies


@dataclass(frozen=True)
class AccessEntry:
    principal_arn: str
    kubernetes_groups: tuple[str, ...] = ()
    access_policies: tuple[str, ...] = ()  # policy names (the ARN's last segment)
    username: str | None = None  # None: EKS's default for the principal


def canonical_arn(arn: str) -> str:
    """The ARN EKS looks an entry up by: an assumed role's session is its role, without path."""
    match = _ASSUMED_ROLE.match(arn) or _ROLE.match(arn)
    if match is None:
        return arn
    return f"arn:{match['partition']}:iam::{match['account']}:role/{match['role']}"


def default_username(arn: str) -> str:
    match = _ASSUMED_ROLE.match(arn)
    if match is None:
        return arn
    return (
        f"arn:{match['partition']}:sts::{match['account']}:assumed-role/{match['role']}/"
        f"{match['session']}"
    )


def policy_name(policy_arn: str) -> str:
    """`arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy` -> its name."""
    return policy_arn.rsplit("/", 1)[-1]


@dataclass
class AccessEntries:
    entries: dict[str, AccessEntry] = field(default_factory=dict)  # by canonical ARN

    @classmethod
    def of(cls, entries: Iterable[AccessEntry]) -> AccessEntries:
        table = cls()
        for entry in entries:
            table.add(entry)
        return table

    def add(self, entry: AccessEntry) -> None:
        """Create an entry; a principal has one entry per cluster (EKS: ResourceInUse)."""
        key = canonical_arn(entry.principal_arn)
        if key in self.entries:
            raise ValueError(f"an access entry for {entry.principal_arn} already exists")
        self.entries[key] = entry

    def user(self, principal_arn: str, uid: str = "") -> UserInfo | None:
        """The Kubernetes user `principal_arn` is, or None when no entry maps it."""
        entry = self.entries.get(canonical_arn(principal_arn))
        if entry is None:
            return None
        return UserInfo(
            username=entry.username or default_username(principal_arn),
            groups=(*entry.kubernetes_groups, AUTHENTICATED),
            uid=uid,
            access_policies=entry.access_policies,
        )
