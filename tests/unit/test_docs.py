"""The docs are checked like code: every relative link and anchor in README.md and docs/*.md
resolves (GitHub's anchor rules), every `gpu-dev` command and subcommand and every CDK
context value is documented, and the state machine's picture is the ASL's."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import click

from gpudev_cli.main import cli
from tools import state_diagram

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OPERATOR_GUIDE = ROOT / "docs" / "operator-guide.md"
CONFIGURATION = "### 3. Every CDK context value"

FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def _prose(text: str) -> str:
    """The text without fenced code blocks (their `#` lines are no headings, links no links)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its rendered text in lower case, everything but word
    characters, hyphens and spaces dropped, spaces made hyphens."""
    text = INLINE_CODE.sub(lambda m: m.group(0).strip("`"), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link shows its text
    text = re.sub(r"<[^>]+>", "", text).replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a document has: its headings' (repeats numbered -1, -2, ... as GitHub
    numbers them) and explicit HTML ones."""
    seen: Counter[str] = Counter()
    found = set(HTML_ANCHOR.findall(text))
    for match in HEADING.finditer(_prose(text)):
        base = slug(match.group(2))
        found.add(f"{base}-{seen[base]}" if seen[base] else base)
        seen[base] += 1
    return found


def links(text: str) -> list[str]:
    """The targets of the document's links, outside code."""
    return LINK.findall(INLINE_CODE.sub("", _prose(text)))


def broken_links(document: Path) -> list[str]:
    wrong = []
    for target in links(document.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, vscode:
            continue
        path, _, anchor = target.partition("#")
        resolved = (document.parent / path).resolve() if path else document
        where = f"{document.relative_to(ROOT)}: ({target})"
        if not resolved.exists():
            wrong.append(f"{where}: no such file")
        elif anchor and anchor not in anchors(resolved.read_text()):
            wrong.append(f"{where}: no such anchor in {resolved.relative_to(ROOT)}")
    return wrong


def every_command(group: click.Group, prefix: str = "gpu-dev") -> list[str]:
    """`gpu-dev` and the path of every command and subcommand under it."""
    ctx = click.Context(group)
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        found.append(f"{prefix} {name}")
        if isinstance(command, click.Group):
            found += every_command(command, f"{prefix} {name}")
    return found


def context_keys() -> set[str]:
    """Every CDK context key cdk_app reads: the `*_CONTEXT` constants, and the string
    literals given to `try_get_context(...)` and `ContextSetting(...)`."""
    keys = set()
    for path in (ROOT / "cdk_app").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                if any(name.endswith("_CONTEXT") for name in names):
                    keys.add(str(node.value.value))
            if isinstance(node, ast.Call) and node.args:
                function = node.func
                called = function.attr if isinstance(function, ast.Attribute) else None
                called = called or (function.id if isinstance(function, ast.Name) else None)
                first = node.args[0]
                if called in ("try_get_context", "ContextSetting") and isinstance(
                    first, ast.Constant
                ):
                    keys.add(str(first.value))
    return keys


def test_the_slugs_follow_githubs_rules():
    assert slug("The layer's map") == "the-layers-map"
    assert slug("Persistent disks (`lifecycle/disk.py`, `disks/volumes.py`)") == (
        "persistent-disks-lifecyclediskpy-disksvolumespy"
    )
    assert slug("3. Every CDK context value") == "3-every-cdk-context-value"
    assert slug("The local cloud (`make run`)") == "the-local-cloud-make-run"
    assert anchors("## Database\n\n```\n# not a heading\n```\n## Database\n") == {
        "database",
        "database-1",
    }


def test_a_broken_link_and_a_missing_anchor_are_found(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "other.md").write_text("# Other\n\n## A section\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-section) [gone](missing.md) [no anchor](other.md#nothing) "
        "[here](#top) `[code](missing.md)` [web](https://example.com)\n\n# Top\n"
    )
    assert broken_links(page) == [
        "page.md: (missing.md): no such file",
        "page.md: (other.md#nothing): no such anchor in other.md",
    ]


def test_every_relative_link_and_anchor_resolves():
    wrong = [problem for document in DOCUMENTS for problem in broken_links(document)]
    assert wrong == []


def test_every_command_and_subcommand_is_documented():
    text = "\n".join(document.read_text() for document in DOCUMENTS)
    commands = every_command(cli)
    assert "gpu-dev disk list-content" in commands  # the walk reaches subcommands
    assert [command for command in commands if command not in text] == []


def test_every_cdk_context_value_is_in_the_operator_guides_table():
    keys = context_keys()
    assert {"gpudev:allowedRoles", "eksClusterName", "maxGpusPerUser", "podImage"} <= keys
    section = OPERATOR_GUIDE.read_text().split(CONFIGURATION, 1)[1].split("\n## ", 1)[0]
    assert [key for key in sorted(keys) if f"`{key}`" not in section] == []


def test_the_state_machines_picture_is_drawn_from_its_asl():
    """Redraw it with `python -m tools.state_diagram --write` after changing the ASL."""
    committed = state_diagram.committed(state_diagram.DOCUMENT.read_text())
    assert committed == state_diagram.diagram()


def test_the_picture_has_every_state_and_only_those():
    drawn = state_diagram.diagram()
    definition = state_diagram.json.loads(state_diagram.ASL.read_text())
    named = re.findall(r'^    state "(.+)" as s\d+$', drawn, re.MULTILINE)
    assert named == list(definition["States"])
