from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.certificates import synth_context

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, Path]]:
    """One synth per test session (3-6 s): the stack and the cloud assembly directory."""
    node_bin = ROOT / "node_modules" / ".bin"
    if node_bin.exists():  # node 22 from npm: jsii warns about the machine's node 20
        os.environ["PATH"] = f"{node_bin}{os.pathsep}{os.environ['PATH']}"
    from cdk_app.app import build_app

    outdir = tmp_path_factory.mktemp("cdk.out")
    context = synth_context(tmp_path_factory.mktemp("certs"))
    app, stack = build_app(outdir=str(outdir), context=context)
    app.synth()
    yield stack, outdir


@pytest.fixture(scope="session")
def template(synthesized: tuple[object, Path]):  # type: ignore[no-untyped-def]
    from aws_cdk.assertions import Template

    stack, _ = synthesized
    return Template.from_stack(stack)  # type: ignore[arg-type]
