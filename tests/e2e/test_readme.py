"""The README's CLI session is what a new user sees: every `$ gpu-dev …` line of the blocks
marked `<!-- run by tests/e2e/test_readme.py -->` in the README and then in the user guide
(which goes on from the README's first session) runs, in order, against the local cloud, and
its output must show the lines written under it.

In the expected lines, `…` stands for anything and `<id8>` for an 8-character id: the first
one seen is remembered and stands for the same id in later commands and output. A line
whose output starts with `error:` must fail (exit 1); every other must succeed. Other `$`
lines (export, alias) set up what the `run` fixture sets up: the credentials file, the
profile (alice), the API URL and the region."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# Read in this order: the user guide's session continues the README's.
DOCUMENTS = (README, ROOT / "docs" / "user-guide.md")
MARKER = "<!-- run by tests/e2e/test_readme.py -->"
ID8 = "<id8>"


@dataclass
class Step:
    command: str
    expected: list[str] = field(default_factory=list)


def sessions(text: str) -> list[list[Step]]:
    """The marked ```console blocks, as commands with the output lines under each."""
    found = []
    for block in text.split(MARKER)[1:]:
        body = block.split("```console\n", 1)[1].split("```", 1)[0]
        steps: list[Step] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append(Step(line[2:].split("  #")[0].strip()))
            elif steps and line.strip():
                steps[-1].expected.append(line.strip())
        found.append(steps)
    return found


def _pattern(expected: list[str], id8: str | None) -> re.Pattern[str]:
    """The lines in order, anything between them; `<id8>` captured once, then the same."""
    pattern = ".*?".join(re.escape(line) for line in expected)
    pattern = re.sub(r"(\\ )+", r"\\s+", pattern.replace("…", ".*?"))
    first, *others = pattern.split(re.escape(ID8))
    for n, part in enumerate(others):
        first += (id8 or ("(?P=id8)" if n else "(?P<id8>[0-9a-f]{8})")) + part
    return re.compile(first, re.DOTALL)


def _commands(*documents: Path) -> list[str]:
    steps = [step for d in documents for session in sessions(d.read_text()) for step in session]
    return [step.command for step in steps if step.command.startswith("gpu-dev ")]


def test_the_readme_has_a_first_session_to_run():
    commands = _commands(README)
    assert len(commands) >= 5
    for needed in ("reserve", "show", "cancel", "avail"):
        assert any(needed in command for command in commands), needed


def test_the_readme_and_the_user_guide_have_a_session_to_run():
    commands = _commands(*DOCUMENTS)
    assert len(commands) >= 10
    for needed in ("reserve", "list", "show", "cancel", "avail", "-o json"):
        assert any(needed in command for command in commands), needed


def test_the_readme_session_runs_as_written(run):
    id8: str | None = None
    for session in [s for document in DOCUMENTS for s in sessions(document.read_text())]:
        for step in session:
            if not step.command.startswith("gpu-dev "):
                continue
            command = step.command.replace(ID8, id8) if id8 else step.command
            assert ID8 not in command, f"{step.command}: no id seen yet"
            result = run(*shlex.split(command)[1:])
            failing = bool(step.expected) and step.expected[0].startswith("error:")
            assert result.exit_code == (1 if failing else 0), (command, result.output)
            match = _pattern(step.expected, id8).search(result.output)
            wanted = "\n".join(step.expected)
            assert match, f"$ {command}\nexpected:\n{wanted}\ngot:\n{result.output}"
            id8 = id8 or match.groupdict().get("id8")
