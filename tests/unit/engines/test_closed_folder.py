"""Which folder keeps Elasticsearch's run user out (a 0700 mktemp folder above the node's state)."""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterator
from pathlib import Path

import pytest

from scopegate.engines.elasticsearch_node import RUN_USER, ElasticsearchNode, ESNodeConfig, first_closed_folder

OTHER_UID = 65534  # nobody: owns none of the test's folders
OTHER_GID = 65534


def _closed_for_run_user(node: ElasticsearchNode, folder: Path) -> Path | None:
    """The first folder on the way to ``folder`` that the node's run user cannot enter, found without
    the node's own check: pytest's base folder may be closed already (0700 for root), and then it is
    the one named, always."""
    node._run_user()  # creates the run user when missing
    entry = pwd.getpwnam(RUN_USER)
    return first_closed_folder(folder, entry.pw_uid, set(os.getgrouplist(RUN_USER, entry.pw_gid)))


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(a clone's folder, the node's home under it); the clone's mode is set by each test."""
    closed = tmp_path / "clone"
    home = closed / ".cache" / "elasticsearch-node" / "home"
    home.mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    yield closed, home
    os.chmod(closed, 0o755)


def test_a_folder_without_execute_for_others_is_named(tmp_path: Path, clone: tuple[Path, Path]) -> None:
    closed, home = clone
    os.chmod(closed, 0o700)
    assert first_closed_folder(home, OTHER_UID, {OTHER_GID}, below=tmp_path) == closed
    os.chmod(home, 0o700)  # the first closed folder on the way down is named, not the deepest
    assert first_closed_folder(home, OTHER_UID, {OTHER_GID}, below=tmp_path) == closed


def test_execute_for_others_the_owner_or_the_group_lets_the_user_through(
    tmp_path: Path, clone: tuple[Path, Path]
) -> None:
    closed, home = clone
    os.chmod(closed, 0o711)
    assert first_closed_folder(home, OTHER_UID, {OTHER_GID}, below=tmp_path) is None
    os.chmod(closed, 0o710)
    assert first_closed_folder(home, OTHER_UID, {OTHER_GID}, below=tmp_path) == closed
    assert first_closed_folder(home, OTHER_UID, {OTHER_GID, closed.stat().st_gid}, below=tmp_path) is None
    os.chmod(closed, 0o100)
    assert first_closed_folder(home, closed.stat().st_uid, set(), below=tmp_path) is None


def test_root_passes_everywhere_and_a_missing_folder_is_not_closed(tmp_path: Path, clone: tuple[Path, Path]) -> None:
    closed, home = clone
    os.chmod(closed, 0o700)
    assert first_closed_folder(home, 0, set(), below=tmp_path) is None
    assert first_closed_folder(tmp_path / "not-there" / "home", OTHER_UID, {OTHER_GID}, below=tmp_path) is None


def test_folders_above_below_are_not_looked_at(tmp_path: Path, clone: tuple[Path, Path]) -> None:
    closed, home = clone
    os.chmod(closed, 0o700)
    assert first_closed_folder(home, OTHER_UID, {OTHER_GID}, below=closed / ".cache") is None


@pytest.mark.skipif(os.geteuid() != 0, reason="the node runs as another user only when started by root")
def test_preparing_a_node_under_a_closed_folder_names_it(tmp_path: Path, clone: tuple[Path, Path]) -> None:
    from scopegate.errors import EngineNodeError

    closed, _ = clone
    node = ElasticsearchNode(ESNodeConfig(state_dir=closed / ".cache" / "es-state"))
    node.config.dist.mkdir(parents=True)  # an unpacked distribution: only its folder is chowned here
    above = _closed_for_run_user(node, tmp_path)
    os.chmod(closed, 0o700)
    named = above or closed
    with pytest.raises(EngineNodeError, match=rf"cannot enter {named} \(mode d") as caught:
        node._prepare(clean=True)
    assert f"chmod o+x {named}" in str(caught.value)
    os.chmod(closed, 0o755)
    if above is None:
        node._prepare(clean=True)  # reachable: no error
    else:
        with pytest.raises(EngineNodeError, match=rf"cannot enter {above} "):
            node._prepare(clean=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="the node runs as another user only when started by root")
def test_blocked_folder_names_what_keeps_the_run_user_out(tmp_path: Path, clone: tuple[Path, Path]) -> None:
    closed, home = clone
    node = ElasticsearchNode()
    above = _closed_for_run_user(node, tmp_path)
    os.chmod(closed, 0o700)
    assert node.blocked_folder(home) == (above or closed)
    os.chmod(closed, 0o755)
    assert node.blocked_folder(home) == above
