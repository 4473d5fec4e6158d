"""The pre-puller's plan (gpudev/prepuller/plan.py): the list (the default image always
first, then the most used, each once, bounded), the pod template that pulls any Linux image
(a static no-op copied from the tools image, never the image's own shell), and a patch only
when the DaemonSet's images differ."""

from __future__ import annotations

import pytest

from gpudev.prepuller.plan import (
    COPY_CONTAINER,
    IMAGES_ANNOTATION,
    NOOP,
    TOOLS_BUSYBOX,
    plan_patch,
    prepull_list,
    template_patch,
)
from gpudev.settings import PrepullerSettings, SettingsError, _load

DEFAULT = "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"
TOOLS = "registry.example/gpu-dev-tools:1"


def test_the_default_image_comes_first_then_the_most_used_in_order():
    assert prepull_list(DEFAULT, ["a@sha256:1", "b@sha256:2"], 5) == [
        DEFAULT,
        "a@sha256:1",
        "b@sha256:2",
    ]


def test_the_list_is_bounded_by_the_count_besides_the_default_image():
    used = [f"img{n}@sha256:{n}" for n in range(10)]
    assert prepull_list(DEFAULT, used, 3) == [DEFAULT, *used[:3]]
    assert prepull_list(DEFAULT, used, 0) == [DEFAULT]


def test_an_image_named_twice_or_the_default_again_is_pulled_once():
    assert prepull_list(DEFAULT, [DEFAULT, "a", "a", "", "b"], 2) == [DEFAULT, "a", "b"]


def test_each_image_runs_the_copied_static_no_op_not_its_own_shell():
    spec = template_patch([DEFAULT, "a@sha256:1"], TOOLS)["spec"]["template"]["spec"]
    copy, *pulls = spec["initContainers"]
    assert copy["name"] == COPY_CONTAINER and copy["image"] == TOOLS
    assert copy["command"] == [TOOLS_BUSYBOX, "cp", TOOLS_BUSYBOX, NOOP]
    assert [(c["name"], c["image"], c["command"]) for c in pulls] == [
        ("pull-0", DEFAULT, [NOOP, "true"]),
        ("pull-1", "a@sha256:1", [NOOP, "true"]),
    ]
    for container in spec["initContainers"]:
        security = container["securityContext"]
        assert security["runAsNonRoot"] and security["capabilities"] == {"drop": ["ALL"]}
        assert security["allowPrivilegeEscalation"] is False
        assert container["volumeMounts"][0]["name"] == spec["volumes"][0]["name"]


def _daemon_set(annotation: str | None) -> dict:
    annotations = {} if annotation is None else {IMAGES_ANNOTATION: annotation}
    return {"spec": {"template": {"metadata": {"annotations": annotations}, "spec": {}}}}


def test_no_patch_when_the_daemon_set_already_pulls_the_same_images_in_order():
    applied = template_patch([DEFAULT, "a"], TOOLS)
    current = _daemon_set(applied["spec"]["template"]["metadata"]["annotations"][IMAGES_ANNOTATION])
    assert plan_patch(current, [DEFAULT, "a"], TOOLS) is None


@pytest.mark.parametrize(
    ("images", "tools"),
    [([DEFAULT, "a", "b", "c"], TOOLS), ([DEFAULT, "b", "a"], TOOLS), ([DEFAULT, "a", "b"], "t:2")],
)
def test_a_patch_when_the_images_their_order_or_the_tools_image_changed(images, tools):
    applied = template_patch([DEFAULT, "a", "b"], TOOLS)
    current = _daemon_set(applied["spec"]["template"]["metadata"]["annotations"][IMAGES_ANNOTATION])
    assert plan_patch(current, images, tools) == template_patch(images, tools)


def test_the_manifest_as_applied_is_patched_at_the_first_run():
    assert plan_patch(_daemon_set(None), [DEFAULT], TOOLS) == template_patch([DEFAULT], TOOLS)
    assert plan_patch({}, [DEFAULT], TOOLS) == template_patch([DEFAULT], TOOLS)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("PREPULLER_DAYS", "0"),
        ("PREPULLER_DAYS", "91"),
        ("PREPULLER_IMAGES", "21"),
        ("PREPULLER_IMAGES", "-1"),
        ("PREPULLER_IMAGES", "many"),
    ],
)
def test_out_of_range_settings_fail_loudly(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=variable.removeprefix("PREPULLER_").lower()):
        _load(PrepullerSettings)
