"""The stand-in's Pod Security admission at both levels it enforces, worded and ordered as
k8s.io/pod-security-admission (policy `latest`) words and orders them: the baseline checks,
then at `baseline` the two that `restricted` replaces (capabilities, seccomp), or at
`restricted` its own checks. A privileged sidecar (`reserve --docker`) is refused at both
levels and admitted only where `privileged` is enforced."""

from __future__ import annotations

from typing import Any

import pytest

from localcloud.kubernetes import pod_security


def _namespace(level: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"ns-{level}",
            "labels": {
                pod_security.ENFORCE_LABEL: level,
                pod_security.ENFORCE_VERSION_LABEL: "latest",
            },
        }
    }


def _restricted_container(name: str = "app", **context: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": "busybox",
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
            **context,
        },
    }


def _pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": list(containers), **spec}}


def test_restricted_admits_a_pod_that_meets_it():
    pod = _pod(_restricted_container(), volumes=[{"name": "v", "emptyDir": {}}])
    assert pod_security.admit_pod(_namespace("restricted"), pod) is None


def test_a_privileged_sidecar_is_refused_at_restricted_and_baseline_and_admitted_at_privileged():
    sidecar = {"name": "docker", "image": "docker:27-dind", "securityContext": {"privileged": True}}
    pod = _pod(_restricted_container(), sidecar)
    restricted = pod_security.admit_pod(_namespace("restricted"), pod)
    assert restricted is not None and restricted.code == 403
    assert restricted.message == (
        'pods "p" is forbidden: violates PodSecurity "restricted:latest": '
        'privileged (container "docker" must not set securityContext.privileged=true), '
        "allowPrivilegeEscalation != false "
        '(container "docker" must set securityContext.allowPrivilegeEscalation=false), '
        "unrestricted capabilities "
        '(container "docker" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "docker" must set '
        "securityContext.runAsNonRoot=true), "
        'seccompProfile (pod or container "docker" must set securityContext.seccompProfile.type '
        'to "RuntimeDefault" or "Localhost")'
    )
    baseline = pod_security.admit_pod(_namespace("baseline"), pod)
    assert baseline is not None and baseline.message == (
        'pods "p" is forbidden: violates PodSecurity "baseline:latest": '
        'privileged (container "docker" must not set securityContext.privileged=true)'
    )
    assert pod_security.admit_pod(_namespace("privileged"), pod) is None
    assert pod_security.admit_pod({"metadata": {"name": "plain"}}, pod) is None


@pytest.mark.parametrize(
    ("pod", "violation"),
    [
        (
            _pod(_restricted_container(capabilities={"drop": ["ALL"], "add": ["SYS_ADMIN"]})),
            'unrestricted capabilities (container "app" must not include "SYS_ADMIN" in '
            "securityContext.capabilities.add)",
        ),
        (
            _pod(_restricted_container(), volumes=[{"name": "h", "hostPath": {"path": "/"}}]),
            'hostPath volumes (volume "h"), restricted volume types '
            '(volume "h" uses restricted volume type "hostPath")',
        ),
        (
            _pod(
                _restricted_container(),
                volumes=[{"name": "a", "nfs": {}}, {"name": "b", "gitRepo": {}}],
            ),
            'restricted volume types (volumes "a", "b" use restricted volume types "gitRepo", '
            '"nfs")',
        ),
        (
            _pod(_restricted_container(runAsNonRoot=False)),
            'runAsNonRoot != true (container "app" must not set '
            "securityContext.runAsNonRoot=false)",
        ),
        (
            _pod(_restricted_container(runAsUser=0), securityContext={"runAsUser": 0}),
            'runAsUser=0 (pod and container "app" must not set runAsUser=0)',
        ),
        (
            _pod(_restricted_container(seccompProfile={"type": "Unconfined"})),
            'seccompProfile (container "app" must not set securityContext.seccompProfile.type to '
            '"Unconfined")',
        ),
    ],
)
def test_each_restricted_check_refuses_with_the_api_servers_words(pod, violation):
    refused = pod_security.admit_pod(_namespace("restricted"), pod)
    assert refused is not None
    assert refused.message == (
        f'pods "p" is forbidden: violates PodSecurity "restricted:latest": {violation}'
    )


def test_a_user_namespaced_pod_may_run_as_root_at_restricted():
    container = _restricted_container(runAsUser=0)
    del container["securityContext"]["runAsNonRoot"]
    assert pod_security.violations(_pod(container), "restricted") != []
    assert pod_security.violations(_pod(container, hostUsers=False), "restricted") == []


def test_baseline_names_capabilities_and_seccomp_after_its_other_checks():
    container = {
        "name": "app",
        "image": "busybox",
        "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}},
        "ports": [{"containerPort": 22, "hostPort": 2222}],
    }
    pod = _pod(container, hostIPC=True, securityContext={"seccompProfile": {"type": "Unconfined"}})
    assert pod_security.violations(pod) == [
        "host namespaces (hostIPC=true)",
        'hostPort (container "app" uses hostPort 2222)',
        'non-default capabilities (container "app" must not include "SYS_ADMIN" in '
        "securityContext.capabilities.add)",
        'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")',
    ]


def test_baseline_joins_whoever_sets_an_unconfined_seccomp_in_one_detail():
    container = {
        "name": "app",
        "image": "busybox",
        "securityContext": {"seccompProfile": {"type": "Unconfined"}},
    }
    pod = _pod(container, securityContext={"seccompProfile": {"type": "Unconfined"}})
    assert pod_security.violations(pod) == [
        'seccompProfile (pod and container "app" must not set '
        'securityContext.seccompProfile.type to "Unconfined")'
    ]
