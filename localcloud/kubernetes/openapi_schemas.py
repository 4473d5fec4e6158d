"""The stand-in's kinds described compactly, for its OpenAPI documents (`openapi.py`).

Each schema is (description, fields, closed). A field's type is "string", "integer",
"boolean", "number", "quantity" (int or string), "map" (string to string), "object" (any
JSON object), another schema's short name ("core.v1.PodSpec"), or either in a list ("[...]").
A closed schema lists every field kube-apiserver's type has, so `fieldValidation=Strict`
refuses a field it does not know; an open one lists only some (marked
`x-kubernetes-preserve-unknown-fields`, and not checked), which keeps the description
small and honest: `kubectl explain` shows what is described, no more."""

from __future__ import annotations

Schema = tuple[str, dict[str, str], bool]

SCHEMAS: dict[str, Schema] = {
    "meta.v1.ObjectMeta": (
        "Standard object's metadata.",
        {
            "name": "string",
            "generateName": "string",
            "namespace": "string",
            "uid": "string",
            "resourceVersion": "string",
            "generation": "integer",
            "creationTimestamp": "string",
            "deletionTimestamp": "string",
            "deletionGracePeriodSeconds": "integer",
            "labels": "map",
            "annotations": "map",
            "ownerReferences": "[meta.v1.OwnerReference]",
            "finalizers": "[string]",
            "managedFields": "[object]",
            "selfLink": "string",
        },
        True,
    ),
    "meta.v1.OwnerReference": (
        "A reference to an owning object.",
        {
            "apiVersion": "string",
            "kind": "string",
            "name": "string",
            "uid": "string",
            "controller": "boolean",
            "blockOwnerDeletion": "boolean",
        },
        True,
    ),
    "meta.v1.LabelSelector": (
        "A label query over a set of resources.",
        {"matchLabels": "map", "matchExpressions": "[meta.v1.LabelSelectorRequirement]"},
        True,
    ),
    "meta.v1.LabelSelectorRequirement": (
        "A selector that contains values, a key, and an operator.",
        {"key": "string", "operator": "string", "values": "[string]"},
        True,
    ),
    "core.v1.Namespace": (
        "Namespace provides a scope for Names.",
        {"spec": "core.v1.NamespaceSpec", "status": "core.v1.NamespaceStatus"},
        True,
    ),
    "core.v1.NamespaceSpec": ("The attributes of a Namespace.", {"finalizers": "[string]"}, True),
    "core.v1.NamespaceStatus": (
        "The current status of a Namespace.",
        {"phase": "string", "conditions": "[object]"},
        True,
    ),
    "core.v1.ConfigMap": (
        "Configuration data for pods to consume.",
        {"data": "map", "binaryData": "map", "immutable": "boolean"},
        True,
    ),
    "core.v1.Secret": (
        "Secret data of a certain type.",
        {"data": "map", "stringData": "map", "type": "string", "immutable": "boolean"},
        True,
    ),
    "core.v1.Pod": (
        "A collection of containers that can run on a host.",
        {"spec": "core.v1.PodSpec", "status": "core.v1.PodStatus"},
        True,
    ),
    "core.v1.PodSpec": (
        "The specification of the desired behavior of the pod.",
        {
            "containers": "[core.v1.Container]",
            "initContainers": "[core.v1.Container]",
            "volumes": "[object]",
            "nodeName": "string",
            "nodeSelector": "map",
            "restartPolicy": "string",
            "terminationGracePeriodSeconds": "integer",
            "activeDeadlineSeconds": "integer",
            "serviceAccountName": "string",
            "automountServiceAccountToken": "boolean",
            "securityContext": "object",
            "tolerations": "[object]",
            "affinity": "object",
            "hostname": "string",
            "schedulerName": "string",
            "dnsPolicy": "string",
            "priorityClassName": "string",
            "runtimeClassName": "string",
        },
        False,
    ),
    "core.v1.Container": (
        "A single application container that you want to run within a pod.",
        {
            "name": "string",
            "image": "string",
            "imagePullPolicy": "string",
            "command": "[string]",
            "args": "[string]",
            "workingDir": "string",
            "env": "[object]",
            "ports": "[object]",
            "resources": "object",
            "volumeMounts": "[object]",
            "securityContext": "object",
            "readinessProbe": "object",
            "livenessProbe": "object",
            "startupProbe": "object",
            "restartPolicy": "string",
        },
        False,
    ),
    "core.v1.PodStatus": (
        "The most recently observed status of the pod.",
        {
            "phase": "string",
            "conditions": "[object]",
            "podIP": "string",
            "podIPs": "[object]",
            "hostIP": "string",
            "startTime": "string",
            "containerStatuses": "[object]",
            "qosClass": "string",
            "reason": "string",
            "message": "string",
        },
        False,
    ),
    "core.v1.Service": (
        "A named abstraction of software service.",
        {"spec": "core.v1.ServiceSpec", "status": "object"},
        True,
    ),
    "core.v1.ServiceSpec": (
        "The attributes a user creates on a service.",
        {
            "type": "string",
            "selector": "map",
            "ports": "[object]",
            "clusterIP": "string",
            "clusterIPs": "[string]",
            "externalIPs": "[string]",
            "sessionAffinity": "string",
        },
        False,
    ),
    "core.v1.Node": (
        "A worker node in Kubernetes.",
        {"spec": "object", "status": "object"},
        True,
    ),
    "core.v1.Event": (
        "A report of an event somewhere in the cluster.",
        {
            "involvedObject": "object",
            "reason": "string",
            "message": "string",
            "source": "object",
            "firstTimestamp": "string",
            "lastTimestamp": "string",
            "count": "integer",
            "type": "string",
            "eventTime": "string",
            "reportingComponent": "string",
            "reportingInstance": "string",
            "action": "string",
            "related": "object",
            "series": "object",
        },
        True,
    ),
    "core.v1.PersistentVolume": (
        "A storage resource provisioned by an administrator.",
        {"spec": "object", "status": "object"},
        True,
    ),
    "core.v1.PersistentVolumeClaim": (
        "A user's request for and claim to a persistent volume.",
        {"spec": "object", "status": "object"},
        True,
    ),
    "apps.v1.DaemonSet": (
        "A set of pods, one on each node that matches its template (the stand-in's apps.py).",
        {"spec": "object", "status": "object"},
        True,
    ),
    "networking.v1.NetworkPolicy": (
        "What network traffic is allowed for a set of Pods.",
        {"spec": "networking.v1.NetworkPolicySpec"},
        True,
    ),
    "networking.v1.NetworkPolicySpec": (
        "The specification of a NetworkPolicy.",
        {
            "podSelector": "meta.v1.LabelSelector",
            "policyTypes": "[string]",
            "ingress": "[networking.v1.NetworkPolicyIngressRule]",
            "egress": "[networking.v1.NetworkPolicyEgressRule]",
        },
        True,
    ),
    "networking.v1.NetworkPolicyIngressRule": (
        "Traffic allowed to the selected pods.",
        {"from": "[networking.v1.NetworkPolicyPeer]", "ports": "[networking.v1.NetworkPolicyPort]"},
        True,
    ),
    "networking.v1.NetworkPolicyEgressRule": (
        "Traffic allowed out of the selected pods.",
        {"to": "[networking.v1.NetworkPolicyPeer]", "ports": "[networking.v1.NetworkPolicyPort]"},
        True,
    ),
    "networking.v1.NetworkPolicyPeer": (
        "A peer to allow traffic to or from.",
        {
            "podSelector": "meta.v1.LabelSelector",
            "namespaceSelector": "meta.v1.LabelSelector",
            "ipBlock": "networking.v1.IPBlock",
        },
        True,
    ),
    "networking.v1.NetworkPolicyPort": (
        "A port to allow traffic on.",
        {"protocol": "string", "port": "quantity", "endPort": "integer"},
        True,
    ),
    "networking.v1.IPBlock": (
        "A particular CIDR to allow, with exceptions.",
        {"cidr": "string", "except": "[string]"},
        True,
    ),
    # RBAC: typed so a rule's lists are lists (a string "*" would be held by the authorizer
    # and by no escalation check); every field of kube-apiserver's types.
    "rbac.v1.Role": (
        "A namespaced set of PolicyRules, referenced by a RoleBinding.",
        {"rules": "[rbac.v1.PolicyRule]"},
        True,
    ),
    "rbac.v1.ClusterRole": (
        "A cluster-level set of PolicyRules, referenced by a RoleBinding or ClusterRoleBinding.",
        {"rules": "[rbac.v1.PolicyRule]", "aggregationRule": "rbac.v1.AggregationRule"},
        True,
    ),
    "rbac.v1.AggregationRule": (
        "How to aggregate ClusterRoles into this one.",
        {"clusterRoleSelectors": "[meta.v1.LabelSelector]"},
        True,
    ),
    "rbac.v1.PolicyRule": (
        "The actions a rule allows on resources or non-resource URLs.",
        {
            "verbs": "[string]",
            "apiGroups": "[string]",
            "resources": "[string]",
            "resourceNames": "[string]",
            "nonResourceURLs": "[string]",
        },
        True,
    ),
    "rbac.v1.RoleBinding": (
        "Grants the permissions of a Role or ClusterRole to subjects in a namespace.",
        {"subjects": "[rbac.v1.Subject]", "roleRef": "rbac.v1.RoleRef"},
        True,
    ),
    "rbac.v1.ClusterRoleBinding": (
        "Grants the permissions of a ClusterRole to subjects across the cluster.",
        {"subjects": "[rbac.v1.Subject]", "roleRef": "rbac.v1.RoleRef"},
        True,
    ),
    "rbac.v1.RoleRef": (
        "The role a binding refers to.",
        {"apiGroup": "string", "kind": "string", "name": "string"},
        True,
    ),
    "rbac.v1.Subject": (
        "A user, group or service account a binding grants to.",
        {"kind": "string", "apiGroup": "string", "name": "string", "namespace": "string"},
        True,
    ),
}
