"""The build context the CLI uploads (cli/gpudev_cli/build_context.py): `.dockerignore` read
as Docker reads it, the Dockerfile at `Dockerfile.gpu-dev` wherever it was, a reproducible
tar (same files, same sha256), and too large a context refused before anything is sent,
naming what is largest."""

from __future__ import annotations

import hashlib
import os
import tarfile
from pathlib import Path

import pytest

from gpudev_cli.build_context import (
    DOCKERFILE_NAME,
    ContextError,
    ContextTooLarge,
    is_ignored,
    pack_context,
    parse_dockerignore,
)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _names(root: Path, dockerfile: str = "Dockerfile") -> list[str]:
    packed = pack_context(root / dockerfile, root)
    try:
        with tarfile.open(fileobj=packed.file) as tar:
            return tar.getnames()
    finally:
        packed.close()


@pytest.mark.parametrize(
    ("patterns", "path", "ignored"),
    [
        ("data", "data/x.bin", True),  # a directory matches everything under it
        ("*.pyc", "a.pyc", True),
        ("*.pyc", "sub/a.pyc", False),  # `*` stays within one component
        ("**/*.pyc", "sub/deep/a.pyc", True),
        ("**/*.pyc", "a.pyc", True),  # `**/` is zero or more directories
        ("/build", "build/out", True),  # a leading `/` is the root
        ("*.md\n!README.md", "README.md", False),  # `!` re-includes
        ("!README.md\n*.md", "README.md", True),  # the last match decides
        ("docs/?.txt", "docs/a.txt", True),
        ("docs/?.txt", "docs/ab.txt", False),
        ("# *\n\n", "anything", False),
        ("logs/[ab].log", "logs/b.log", True),
        ("logs/[!ab].log", "logs/b.log", False),
    ],
)
def test_dockerignore_patterns_read_as_docker_reads_them(patterns, path, ignored):
    assert is_ignored(path, parse_dockerignore(patterns)) is ignored


def test_the_tar_holds_the_context_less_what_is_ignored_and_the_dockerfile(tmp_path):
    root = _tree(
        tmp_path,
        {
            "Dockerfile": "FROM ubuntu\n",
            ".dockerignore": "data/\n*.log\n",
            "train.py": "x",
            "data/big.bin": "y",
            "run.log": "z",
            "src/model.py": "m",
        },
    )
    assert _names(root) == [
        ".dockerignore",
        "Dockerfile",
        "src/model.py",
        "train.py",
        DOCKERFILE_NAME,
    ]


def test_a_dockerfile_outside_the_context_is_added_under_its_fixed_name(tmp_path):
    context = _tree(tmp_path / "ctx", {"app.py": "a"})
    dockerfile = _tree(tmp_path / "elsewhere", {"Dockerfile.cuda": "FROM cuda\n"})
    packed = pack_context(dockerfile / "Dockerfile.cuda", context)
    with tarfile.open(fileobj=packed.file) as tar:
        assert tar.getnames() == ["app.py", DOCKERFILE_NAME]
        member = tar.extractfile(DOCKERFILE_NAME)
        assert member is not None and member.read() == b"FROM cuda\n"
    packed.close()


def test_the_same_files_give_the_same_hash_whatever_their_times_and_owners(tmp_path):
    one = _tree(tmp_path / "one", {"Dockerfile": "FROM a\n", "x.py": "1"})
    two = _tree(tmp_path / "two", {"Dockerfile": "FROM a\n", "x.py": "1"})
    os.utime(two / "x.py", (1_000_000, 1_000_000))
    first, second = pack_context(one / "Dockerfile"), pack_context(two / "Dockerfile")
    assert first.sha256 == second.sha256
    assert first.sha256 == hashlib.sha256(first.file.read()).hexdigest()  # the bytes sent
    assert first.size == len(second.file.read())
    (two / "x.py").write_text("2")
    assert pack_context(two / "Dockerfile").sha256 != first.sha256
    first.close()
    second.close()


def test_an_ignored_file_does_not_change_the_hash(tmp_path):
    root = _tree(tmp_path, {"Dockerfile": "FROM a\n", ".dockerignore": "cache\n", "cache/x": "1"})
    before = pack_context(root / "Dockerfile").sha256
    (root / "cache" / "x").write_text("changed")
    assert pack_context(root / "Dockerfile").sha256 == before


def test_an_executable_keeps_its_bit_and_nothing_else_of_its_mode(tmp_path):
    root = _tree(tmp_path, {"Dockerfile": "FROM a\n", "run.sh": "#!/bin/sh\n"})
    (root / "run.sh").chmod(0o700)
    packed = pack_context(root / "Dockerfile")
    with tarfile.open(fileobj=packed.file) as tar:
        member = tar.getmember("run.sh")
        assert (member.mode, member.uid, member.mtime, member.uname) == (0o755, 0, 0, "")
    packed.close()


def test_too_large_a_context_is_refused_naming_the_largest_files(tmp_path):
    root = _tree(tmp_path, {"Dockerfile": "FROM a\n", "small.txt": "s"})
    (root / "weights.bin").write_bytes(b"w" * 5_000)
    with pytest.raises(ContextTooLarge) as refused:
        pack_context(root / "Dockerfile", limit=4_000)
    assert "over the limit" in str(refused.value)
    assert "weights.bin" in str(refused.value)
    assert ".dockerignore" in str(refused.value)


def test_a_missing_dockerfile_or_context_is_said_in_a_sentence(tmp_path):
    with pytest.raises(ContextError, match="no Dockerfile at"):
        pack_context(tmp_path / "Dockerfile")
    (tmp_path / "Dockerfile").write_text("FROM a\n")
    with pytest.raises(ContextError, match="is not a directory"):
        pack_context(tmp_path / "Dockerfile", tmp_path / "nowhere")


def test_the_home_directory_is_never_the_implied_context(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "Dockerfile").write_text("FROM a\n")
    with pytest.raises(ContextError, match="your home directory"):
        pack_context(tmp_path / "Dockerfile")
    # named with --context, it is the user's choice
    pack_context(tmp_path / "Dockerfile", tmp_path).close()


def test_a_directory_above_the_home_directory_is_never_the_implied_context(tmp_path, monkeypatch):
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "home" / "Dockerfile").write_text("FROM a\n")
    with pytest.raises(ContextError, match="would hold your home directory"):
        pack_context(tmp_path / "home" / "Dockerfile")


@pytest.mark.parametrize("secret", [".ssh", ".aws", ".gnupg", ".docker", ".kube"])
def test_a_context_holding_keys_is_refused_unless_ignored_or_named(tmp_path, secret):
    root = tmp_path / "project"
    (root / secret).mkdir(parents=True)
    (root / secret / "id").write_text("private\n")
    (root / "Dockerfile").write_text("FROM a\n")
    with pytest.raises(ContextError, match=f"holds {secret}"):
        pack_context(root / "Dockerfile")
    pack_context(root / "Dockerfile", root).close()
    (root / ".dockerignore").write_text(f"{secret}\n")
    pack_context(root / "Dockerfile").close()
