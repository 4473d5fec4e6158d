"""cdk-nag AwsSolutions acknowledgements, each with the reason we accept the finding.

Acknowledged on the stack, so a new construct that trips one of these rules is covered
only if the same reason holds: review this list when adding resources.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct

_MANAGED = "arn:<AWS::Partition>:iam::aws:policy/service-role"

ACKNOWLEDGED: dict[str, str] = {
    f"AwsSolutions::AwsSolutions-IAM4[Policy::{_MANAGED}/AWSLambdaBasicExecutionRole]": (
        "The AWS managed basic execution policy grants only CloudWatch Logs writes, which "
        "every function needs; a copy of it would drift from AWS's maintained version."
    ),
    f"AwsSolutions::AwsSolutions-IAM4[Policy::{_MANAGED}/AWSLambdaVPCAccessExecutionRole]": (
        "VPC functions need ENI management; AWS maintains the minimal action set."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::*]": (
        "Actions without resource-level permissions: X-Ray PutTraceSegments/PutTelemetryRecords "
        "(active tracing) and the reconcilers' read-only Describe* calls (Auto Scaling groups, "
        "EBS volumes and snapshots, instances, EFS access points); every other grant is "
        "scoped to a resource ARN."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
    "<AWS::AccountId>:execution:gpudev-reservation:*]": (
        "DescribeExecution on the reservation state machine's executions, which are named by "
        "reservation id and so not known in advance; scoped to that one state machine."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:elasticfilesystem:"
    "<AWS::Region>:<AWS::AccountId>:access-point/*]": (
        "A user's access point does not exist before it is made: TagResource only within "
        "the CreateAccessPoint call (elasticfilesystem:CreateAction) and only with the "
        "gpu-dev-user tag."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:"
    "<AWS::AccountId>:volume/*]": (
        "A named disk's volume is created per reservation, so its id is not known in advance; "
        "every action on it is conditioned on the disk's reservation-id and gpu-dev-user tags "
        "(aws:RequestTag when created, ec2:ResourceTag after), CreateTags only within the "
        "create call; the disk jobs' tag changes only on resources tagged gpu-dev-user, only "
        "the disk's keys, and only with keys named (never a DeleteTags of every tag)."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>::"
    "snapshot/*]": (
        "A named disk's snapshots are made at each ending, so their ids are not known in "
        "advance; every action on them is conditioned on the disk's reservation-id and "
        "gpu-dev-user tags, or on the gpu-dev-user tag (a volume made from the disk's "
        "earlier snapshots; the disk jobs' tags), and for the purge's deletes also on the "
        "delete-date tag a deleted disk's snapshots carry."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:"
    "<AWS::AccountId>:instance/*]": (
        "Only DetachVolume, to force a disk's volume off a hung node before it is "
        "snapshotted; the node's id is not known in advance, the instance must carry EKS's "
        "eks:cluster-name tag with our cluster's name, and the same call must also be "
        "allowed on the volume, which is conditioned on the disk's reservation-id and "
        "gpu-dev-user tags."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:"
    "<AWS::AccountId>:log-group:/gpu-dev/pods:*]": (
        "The dev pods' log group's streams, one per pod, named by reservation id and so not "
        "known in advance (cdk_app/logs.py): Fluent Bit may create streams and put events in "
        "this one group, the API may only read it."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:"
    "<AWS::AccountId>:elastic-ip/*]": (
        "An EFA node's Elastic IP is allocated when the node appears, so its id is not known "
        "in advance; it is allocated only with the gpu-dev:instance tag (aws:RequestTag, that "
        "key alone), tagged only within the allocation, and associated or released only when "
        "it carries that tag (gpudev/cluster/addresses.py)."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:"
    "<AWS::AccountId>:network-interface/*]": (
        "Only AssociateAddress, to put an EFA node's Elastic IP on its primary interface: EC2 "
        "makes that interface with the instance, so its id is not known in advance and it "
        "carries no tag of ours; the same call must also be allowed on the address, which "
        "is conditioned on the gpu-dev:instance tag."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::<ReservationTasksFunction83AA4231.Arn>:*]": (
        "CDK's grant_invoke for the state machine covers the task function's versions and "
        "aliases (<arn>:*), and nothing else."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ses:<AWS::Region>:"
    "<AWS::AccountId>:identity/*]": (
        "SES identities of users' notification addresses, made when a user saves one, so "
        "not known in advance: the API may only create and read them, the notifier only read "
        "them and send, and its sends only from the configured sender (ses:FromAddress)."
    ),
    "AwsSolutions::AwsSolutions-L1": (
        "Functions run Python 3.12 on purpose: the layer's wheels are built for cp312 and the "
        "runtime is a project decision (docs/decisions.md); upgrading is a deliberate change."
    ),
    "AwsSolutions::AwsSolutions-SMG4": (
        "Only the migration function reads the master secret, once per run (a direct "
        "connection, never pooled); every other function logs in with IAM database "
        "authentication tokens, so rotating the master password needs no function change. "
        "Rotation itself is left to operators (docs/decisions.md, 2026-11-23)."
    ),
    f"AwsSolutions::AwsSolutions-IAM4[Policy::{_MANAGED}/AmazonAPIGatewayPushToCloudWatchLogs]": (
        "API Gateway's account-level CloudWatch role for execution logs; the AWS managed "
        "policy is the documented minimal grant for it."
    ),
    "AwsSolutions::AwsSolutions-APIG2": (
        "Requests are validated by the API function (powertools resolver with pydantic "
        "models: 422 with field locations), one model shared with the CLI; a second copy of "
        "the schema in API Gateway would drift."
    ),
    "AwsSolutions::AwsSolutions-COG4": (
        "Callers are IAM principals (SigV4, AWS_IAM auth) using their normal AWS credentials "
        "and SSO; there is no Cognito user pool by design."
    ),
    "AwsSolutions::AwsSolutions-APIG3": (
        "IAM auth rejects unsigned traffic before it reaches the function and stage "
        "throttling bounds the rest; a WAF web ACL is an account-level choice left to operators."
    ),
}


def acknowledge_public_route(method: IConstruct) -> None:
    Validations.of(method).acknowledge(
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-APIG4",
            reason="Public by design: the health check answers without credentials and "
            "reveals nothing but liveness.",
        )
    )


def acknowledge_dead_letter_target(queue: IConstruct) -> None:
    """SQS3 on a queue that is a dead-letter queue of an EventBridge target and a Lambda
    asynchronous on-failure destination, which cdk-nag recognises only for SQS redrives."""
    Validations.of(queue).acknowledge(
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-SQS3",
            reason="It is a dead-letter queue: the notify rule's target DLQ and the "
            "notifier's on-failure destination (cdk_app/notifications.py), alarmed on.",
        )
    )


_AWS_POLICY = "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy"
CLUSTER_ACKNOWLEDGED: dict[str, str] = {
    f"{_AWS_POLICY}/AmazonEKSClusterPolicy]": (
        "The EKS service role's documented policy; EKS adds actions to it as the service "
        "grows, which a copy would miss."
    ),
    f"{_AWS_POLICY}/AmazonEKSWorkerNodePolicy]": (
        "The documented node role policy (the kubelet describes its instance and joins); "
        "maintained by AWS with the node AMIs."
    ),
    f"{_AWS_POLICY}/AmazonEC2ContainerRegistryPullOnly]": (
        "Nodes pull the add-ons' images from ECR: pull-only, the narrowest managed policy."
    ),
    f"{_AWS_POLICY}/AmazonEKS_CNI_Policy]": (
        "The VPC CNI assigns pod addresses (ENIs, IPs) on every node; AWS maintains the "
        "action set with the add-on's versions. Assumed only by the aws-node service "
        "account (pod identity), not by the node role."
    ),
    f"{_AWS_POLICY}/service-role/AmazonEBSCSIDriverPolicy]": (
        "The EBS CSI driver's documented policy, its creates and deletes conditioned on the "
        "driver's own tags; assumed only by its controller's service account (pod identity)."
    ),
}


def acknowledge_public_endpoint(cluster: IConstruct, cidrs: list[str]) -> None:
    """EKS1 (a public API server endpoint) on the cluster alone, and only when the operator
    listed networks in `gpudev:clusterEndpointPublicCidrs`: by default it is off."""
    Validations.of(cluster).acknowledge(
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-EKS1",
            reason="Public endpoint asked for in gpudev:clusterEndpointPublicCidrs and open "
            f"to {', '.join(cidrs)} only: operators' kubectl. Every request is still "
            "authenticated by IAM and authorized by access entries; the nodes and the "
            "functions use the private endpoint.",
        )
    )


def acknowledge_cluster_findings(stack: Stack) -> None:
    """The cluster stack's own list (cdk_app/cluster_stack.py): its roles are AWS services'."""
    Validations.of(stack).acknowledge(
        *(Acknowledgment(id=rule, reason=reason) for rule, reason in CLUSTER_ACKNOWLEDGED.items())
    )


def acknowledge_findings(stack: Stack) -> None:
    Validations.of(stack).acknowledge(
        *(Acknowledgment(id=rule, reason=reason) for rule, reason in ACKNOWLEDGED.items())
    )
