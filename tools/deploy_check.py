"""`make deploy-check`: before `cdk deploy`, check with the operator's own AWS credentials
(the standard chain: AWS_PROFILE, SSO, environment) every prerequisite
docs/operator-guide.md lists, and print what is missing. Exit status 1 when something
required is missing.

It reads the same CDK context as the deploy (cdk.json, then `-c key=value` overrides), so it
checks the cluster and network the deploy will use, and the RDS CA bundle the layer will
ship (a review synth's placeholder is refused). Read-only: describe/list calls only."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from cdk_app.ca_bundle import RdsCaBundleMissing, configured_path, rds_ca_bundle
from cdk_app.paths import CA_BUNDLE_CONTEXT

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CLUSTER = "pytorch-gpu-dev-cluster"
NAMESPACES = ("gpu-dev", "gpu-dev-profiling", "gpu-dev-docker")  # deploy/kubernetes/namespace.yaml
BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
MIN_BOOTSTRAP_VERSION = 6


@dataclass(frozen=True)
class Finding:
    check: str
    ok: bool
    detail: str
    required: bool = True


@dataclass
class Context:
    values: dict[str, Any]

    @property
    def cluster_name(self) -> str:
        return str(self.values.get("eksClusterName") or DEFAULT_CLUSTER)

    def ids(self, key: str) -> list[str]:
        raw = self.values.get(key)
        if isinstance(raw, str):
            raw = json.loads(raw) if raw.startswith("[") else raw.split(",")
        return [str(item).strip() for item in raw or []]


def load_context(overrides: list[str]) -> Context:
    values = dict(json.loads((ROOT / "cdk.json").read_text()).get("context", {}))
    for item in overrides:
        key, separator, value = item.partition("=")
        if not separator:
            raise SystemExit(f"-c {item!r}: expected key=value")
        values[key] = value
    return Context(values)


def check_build_inputs(context: Context) -> Iterator[Finding]:
    """What the deploy's synth needs on this machine: the real RDS CA bundle (`make synth`
    may have used a placeholder; a deploy may not)."""
    try:
        path = rds_ca_bundle(configured_path(context.values.get(CA_BUNDLE_CONTEXT)))
    except RdsCaBundleMissing as missing:
        yield Finding("RDS CA bundle", False, str(missing))
        return
    yield Finding(
        "RDS CA bundle", True, str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    )


def check_aws(clients: Callable[[str], Any], context: Context) -> Iterator[Finding]:
    """The account side: credentials, CDK bootstrap, the cluster, the network choice, the
    Auto Scaling groups the availability updater counts."""
    identity = clients("sts").get_caller_identity()
    yield Finding("credentials", True, f"{identity['Arn']} in account {identity['Account']}")
    yield from _allowed_roles(clients("iam"), context)
    try:
        version = clients("ssm").get_parameter(Name=BOOTSTRAP_PARAMETER)["Parameter"]["Value"]
        ok = int(version) >= MIN_BOOTSTRAP_VERSION
        yield Finding("cdk bootstrap", ok, f"version {version}" + ("" if ok else ": re-run it"))
    except clients("ssm").exceptions.ParameterNotFound:
        yield Finding("cdk bootstrap", False, "not bootstrapped: run `cdk bootstrap` once")
    eks = clients("eks")
    try:
        cluster = eks.describe_cluster(name=context.cluster_name)["cluster"]
    except eks.exceptions.ResourceNotFoundException:
        yield Finding(
            "EKS cluster",
            False,
            f"{context.cluster_name!r} not found in this region (context eksClusterName)",
        )
        return
    status = cluster["status"]
    yield Finding("EKS cluster", status == "ACTIVE", f"{cluster['name']}: {status}")
    mode = (cluster.get("accessConfig") or {}).get("authenticationMode", "CONFIG_MAP")
    yield Finding(
        "access entries",
        mode in ("API", "API_AND_CONFIG_MAP"),
        f"authentication mode {mode}"
        + ("" if mode != "CONFIG_MAP" else ": enable access entries (API_AND_CONFIG_MAP)"),
    )
    yield from _network(clients, context, cluster.get("resourcesVpcConfig") or {})
    yield from _scaling_groups(clients("autoscaling"))
    yield from _efa_security_group(clients("ec2"), cluster.get("resourcesVpcConfig") or {})


# Who may assume a role and still not choose its session name: a SAML identity provider
# (Identity Center's included) sets it. A web-identity caller passes RoleSessionName itself.
_FEDERATED_ACTIONS = {"sts:assumerolewithsaml", "sts:tagsession", "sts:setsourceidentity"}


def _allowed_roles(iam: Any, context: Context) -> Iterator[Finding]:
    """Each `gpudev:allowedRoles` role must get its session names from an identity provider:
    the session name is the username, and the first principal to use a username claims it
    (docs/security.md, "Usernames can't be squatted"). A role that IAM principals may
    assume with `sts:AssumeRole` lets them pick any session name, another user's included."""
    entries = context.ids("gpudev:allowedRoles")
    if not entries:
        yield Finding(
            "allowed roles",
            False,
            "gpudev:allowedRoles is empty: the synth refuses it, since a session of any role "
            "could name itself after another user and claim that username",
        )
        return
    sys.path.insert(0, str(ROOT / "layers" / "gpudev" / "python"))
    from gpudev.identity import RolePattern

    for entry in entries:
        pattern = RolePattern.parse(entry)
        roles = [
            role
            for page in iam.get_paginator("list_roles").paginate(PathPrefix=pattern.path)
            for role in page["Roles"]
            if role["Path"] == pattern.path and pattern.matches(role["RoleName"])
        ]
        if not roles:
            yield Finding(
                "allowed roles",
                False,
                f"{entry}: no role matches yet (Identity Center creates a permission set's "
                "role when the set is assigned to this account)",
                required=False,
            )
        for role in roles:
            chosen = _self_named_assumers(role["AssumeRolePolicyDocument"])
            yield Finding(
                "allowed roles",
                not chosen,
                f"{role['RoleName']}: session names set by an identity provider"
                if not chosen
                else f"{role['RoleName']}: {', '.join(chosen)} may assume it and choose the "
                "session name, i.e. any user's username; allow only sts:AssumeRoleWithSAML "
                "(an identity provider names the session), or pin sts:RoleSessionName",
            )


def _self_named_assumers(trust: Any) -> list[str]:
    """The principals a trust policy lets assume the role and name the session themselves:
    any action but SAML's (`sts:AssumeRole`, `sts:AssumeRoleWithWebIdentity`, `sts:*`, `*`,
    or a `NotAction`), unless the statement pins the name with an `sts:RoleSessionName`
    condition."""
    document = json.loads(unquote(trust)) if isinstance(trust, str) else trust
    statements = document.get("Statement", [])
    found = []
    for statement in statements if isinstance(statements, list) else [statements]:
        if statement.get("Effect") != "Allow":
            continue
        actions = statement.get("Action", [])
        actions = [actions] if isinstance(actions, str) else actions
        names_itself = "NotAction" in statement or any(
            action.lower() not in _FEDERATED_ACTIONS for action in actions
        )
        pinned = any(
            key.lower() == "sts:rolesessionname"
            for condition in (statement.get("Condition") or {}).values()
            for key in condition
        )
        if names_itself and not pinned:
            found.append(json.dumps(statement.get("Principal", "*"), sort_keys=True))
    return found


def _network(
    clients: Callable[[str], Any], context: Context, vpc_config: dict[str, Any]
) -> Iterator[Finding]:
    vpc_id = context.values.get("gpudev:vpcId")
    private_only = not vpc_config.get("endpointPublicAccess", True)
    if not vpc_id:
        if private_only:
            yield Finding(
                "EKS endpoint reachable",
                False,
                "the cluster's endpoint is private: deploy into its VPC (context "
                f"gpudev:vpcId={vpc_config.get('vpcId', '<its VPC>')} and subnets)",
            )
        else:
            cidrs = vpc_config.get("publicAccessCidrs") or ["0.0.0.0/0"]
            yield Finding(
                "EKS endpoint reachable",
                True,
                "public endpoint"
                + (
                    ""
                    if "0.0.0.0/0" in cidrs
                    else f" limited to {cidrs}: add the stack's NAT address after the first deploy"
                ),
            )
        return
    if vpc_config.get("vpcId") and vpc_config["vpcId"] != vpc_id:
        yield Finding(
            "VPC choice", False, f"gpudev:vpcId is {vpc_id}, the cluster's is {vpc_config['vpcId']}"
        )
    subnet_ids = context.ids("gpudev:functionSubnetIds") + context.ids("gpudev:databaseSubnetIds")
    ec2 = clients("ec2")
    try:
        subnets = ec2.describe_subnets(SubnetIds=subnet_ids)["Subnets"] if subnet_ids else []
    except ec2.exceptions.ClientError as error:
        yield Finding("VPC choice", False, f"subnets: {error.response['Error']['Message']}")
        return
    outside = sorted(s["SubnetId"] for s in subnets if s["VpcId"] != vpc_id)
    zones = set(context.ids("gpudev:availabilityZones"))
    elsewhere = sorted(s["SubnetId"] for s in subnets if s["AvailabilityZone"] not in zones)
    problems = (
        ([f"{', '.join(outside)} not in {vpc_id}"] if outside else [])
        + ([f"{', '.join(elsewhere)} outside gpudev:availabilityZones"] if elsewhere else [])
        + ([] if subnet_ids else ["no gpudev:functionSubnetIds"])
    )
    yield Finding(
        "VPC choice", not problems, "; ".join(problems) or f"{len(subnets)} subnets in {vpc_id}"
    )


def _scaling_groups(autoscaling: Any) -> Iterator[Finding]:
    from gpudev.availability.compute import counted_group_name  # the updater's own rule

    counted = (
        counted_group_name(group)
        for page in autoscaling.get_paginator("describe_auto_scaling_groups").paginate()
        for group in page["AutoScalingGroups"]
    )
    names = [name for name in counted if name is not None]
    yield Finding(
        "node groups",
        bool(names),
        ", ".join(sorted(names))
        or "no Auto Scaling group (or EKS managed node group) named "
        "pytorch-gpu-dev-gpu-nodes-<type>…: availability shows 0",
    )


def _efa_security_group(ec2: Any, vpc_config: dict[str, Any]) -> Iterator[Finding]:
    """EFA's security group rule (cdk_app/fabric.py): the cluster security group lets all
    traffic in from itself (EKS's own rule) and out to itself (the cluster stack's). A
    warning only: without EFA node groups, nothing needs it."""
    group_id = vpc_config.get("clusterSecurityGroupId")
    if not group_id:
        return
    (group,) = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"]

    def to_itself(rules: list[dict[str, Any]]) -> bool:
        return any(
            rule.get("IpProtocol") == "-1"
            and any(pair.get("GroupId") == group_id for pair in rule.get("UserIdGroupPairs", []))
            for rule in rules
        )

    missing = [
        direction
        for direction, rules in (
            ("in from", group.get("IpPermissions", [])),
            ("out to", group.get("IpPermissionsEgress", [])),
        )
        if not to_itself(rules)
    ]
    yield Finding(
        "EFA security group",
        not missing,
        f"{group_id} lets all traffic in from and out to itself"
        if not missing
        else f"{group_id} lacks all traffic {' and '.join(missing)} itself, which EFA needs "
        "(the cluster stack adds the egress rule when it has an EFA node group)",
        required=False,
    )


def check_kubernetes(api_client: Any) -> Iterator[Finding]:
    """The cluster side, as the operator: deploy/kubernetes/ applied, GPU nodes labelled."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(api_client)
    networking = client.NetworkingV1Api(api_client)
    for namespace in NAMESPACES:
        try:
            core.read_namespace(namespace)
            policies = networking.list_namespaced_network_policy(namespace).items
        except ApiException as error:
            if error.status != 404:
                raise
            yield Finding(
                f"namespace {namespace}", False, "missing: kubectl apply -f deploy/kubernetes/"
            )
            continue
        yield Finding(
            f"namespace {namespace}",
            bool(policies),
            f"{len(policies)} network policies"
            if policies
            else "no network policies: kubectl apply -f deploy/kubernetes/network-policies.yaml",
        )
    labelled = core.list_node(label_selector="GpuType").items
    yield Finding(
        "GPU nodes labelled",
        bool(labelled),
        f"{len(labelled)} nodes carry GpuType"
        if labelled
        else "no node carries the GpuType label the allocator schedules by",
        required=False,
    )
    yield from _efa_nodes(core.list_node(label_selector=PLACEMENT_GROUP_LABEL).items)


PLACEMENT_GROUP_LABEL = "gpu-dev/placement-group"  # gpudev.cluster.vocabulary's, cdk_app/fabric.py
EFA_RESOURCE = "vpc.amazonaws.com/efa"
ZONE_LABEL = "topology.kubernetes.io/zone"


def _efa_nodes(nodes: list[Any]) -> Iterator[Finding]:
    """The EFA node groups' nodes (labelled with their placement group by the cluster
    stack): each advertises its EFA interfaces (the launch template's interfaces and the
    EFA device plugin, deploy/kubernetes/efa-device-plugin.yaml), and each placement group's
    nodes share one zone. None is fine: multinode NCCL then runs over TCP."""
    if not nodes:
        yield Finding("EFA nodes", True, "no EFA node group (multinode runs over TCP)", False)
        return
    without = [
        n.metadata.name
        for n in nodes
        if int((n.status.allocatable or {}).get(EFA_RESOURCE, "0") or 0) == 0
    ]
    zones: dict[str, set[str]] = {}
    for node in nodes:
        labels = node.metadata.labels or {}
        zones.setdefault(labels[PLACEMENT_GROUP_LABEL], set()).add(labels.get(ZONE_LABEL, ""))
    split = sorted(group for group, seen in zones.items() if len(seen) > 1)
    yield Finding(
        "EFA nodes",
        not without and not split,
        f"{len(nodes)} nodes advertise {EFA_RESOURCE}, each placement group in one zone"
        if not without and not split
        else (
            f"no {EFA_RESOURCE} on {', '.join(sorted(without))}: kubectl apply -f "
            "deploy/kubernetes/efa-device-plugin.yaml (and the cluster stack's EFA launch "
            "template)"
            if without
            else f"placement groups spanning zones: {', '.join(split)}"
        ),
        required=False,
    )


def report(findings: list[Finding]) -> int:
    width = max(len(f.check) for f in findings)
    for finding in findings:
        mark = "ok  " if finding.ok else ("FAIL" if finding.required else "warn")
        print(f"{mark}  {finding.check:<{width}}  {finding.detail}")
    missing = [f for f in findings if f.required and not f.ok]
    print(f"\n{len(missing)} required prerequisite(s) missing" if missing else "\nready to deploy")
    return 1 if missing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make deploy-check", description=__doc__)
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--profile", help="an AWS profile (default: the standard chain)")
    parser.add_argument("--region", help="the deployment's region (default: the profile's)")
    parser.add_argument("--skip-kubernetes", action="store_true", help="check the AWS side only")
    arguments = parser.parse_args(argv)
    import boto3

    session = boto3.Session(profile_name=arguments.profile, region_name=arguments.region)
    context = load_context(arguments.context)
    findings = [*check_build_inputs(context), *check_aws(session.client, context)]
    cluster_ok = any(f.check == "EKS cluster" and f.ok for f in findings)
    if cluster_ok and not arguments.skip_kubernetes:
        sys.path.insert(0, str(ROOT / "layers" / "gpudev" / "python"))
        from gpudev.aws import AwsClients
        from gpudev.cluster.eks import kubernetes_api_client
        from gpudev.settings import ClusterSettings

        aws = AwsClients(session=session, region=session.region_name)
        findings += check_kubernetes(
            kubernetes_api_client(aws, ClusterSettings(eks_cluster_name=context.cluster_name))
        )
    return report(findings)


if __name__ == "__main__":
    sys.exit(main())
