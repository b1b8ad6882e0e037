"""Which engine version a local node runs, where it keeps its state and which Java runs it (issue 35 item 6).

Nothing set keeps today's nodes (OpenSearch 2.19.6, Elasticsearch 8.19.21, their state folders); a version
asked for on the command line or in the environment gets its own launcher or distribution, its own state
folder, and a JDK new enough for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from scopegate.cli import main
from scopegate.cli.core import ExitCode
from scopegate.engines import _releases
from scopegate.engines._node import LAUNCHERS
from scopegate.engines._releases import Release, java_for, java_major, pick, state_name
from scopegate.engines.elasticsearch_node import ElasticsearchNode, ESNodeConfig
from scopegate.engines.elasticsearch_node import node_from_options as es_from_options
from scopegate.engines.opensearch_node import NodeConfig, OpenSearchNode, knn_node_config
from scopegate.engines.opensearch_node import node_from_options as os_from_options
from scopegate.errors import EngineNodeError

ENVS = ("SCOPEGATE_OPENSEARCH_VERSION", "SCOPEGATE_ELASTICSEARCH_VERSION", "SCOPEGATE_OPENSEARCH_JAVA_HOME",
        "SCOPEGATE_ELASTICSEARCH_JAVA_HOME", "SCOPEGATE_OPENSEARCH_STATE_DIR", "SCOPEGATE_ELASTICSEARCH_STATE_DIR",
        "SCOPEGATE_JAVA")  # fmt: skip


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ENVS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SCOPEGATE_CACHE_DIR", str(tmp_path / "cache"))


def jdk(root: Path, name: str, version: str) -> Path:
    """A JDK folder as the node managers see one: ``bin/java`` and a ``release`` file."""
    home = root / name
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("#!/bin/sh\n")
    (home / "bin" / "java").chmod(0o755)
    (home / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION="{version}"\n')
    return home


def test_nothing_set_keeps_todays_nodes(tmp_path: Path) -> None:
    assert pick("opensearch").version == "2.19.6"
    assert pick("elasticsearch").version == "8.19.21"
    os_cfg, es_cfg = NodeConfig(), ESNodeConfig()
    assert os_cfg.launcher == LAUNCHERS / "opensearch"
    assert os_cfg.state_dir == tmp_path / "cache" / "opensearch-node"
    assert OpenSearchNode(os_cfg).build_dir == tmp_path / "cache" / "engines" / "opensearch"
    assert es_cfg.version == "8.19.21"
    assert es_cfg.state_dir == tmp_path / "cache" / "elasticsearch-node"
    assert os_from_options().config.state_dir == os_cfg.state_dir
    assert es_from_options().config.state_dir == es_cfg.state_dir
    # The k-NN node keeps its own launcher and version.
    assert knn_node_config(tmp_path / "knn").launcher == LAUNCHERS / "opensearch-knn"


@pytest.mark.parametrize("asked", ["3", "3.x", "3.X", "3.9.0"])
def test_opensearch_3_by_major_or_exact_version(asked: str) -> None:
    release = pick("opensearch", asked)
    assert (release.version, release.java, release.launcher) == ("3.9.0", 21, "opensearch3")
    assert (LAUNCHERS / release.launcher / "pom.xml").read_text().count("<opensearch.version>3.9.0<") == 1


def test_the_environment_picks_the_version_the_test_fixtures_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SCOPEGATE_OPENSEARCH_VERSION", "3")
    monkeypatch.setenv("SCOPEGATE_ELASTICSEARCH_VERSION", "9")
    os_cfg, es_cfg = NodeConfig(), ESNodeConfig()
    assert os_cfg.release.version == "3.9.0"
    assert os_cfg.launcher == LAUNCHERS / "opensearch3"
    assert os_cfg.state_dir == tmp_path / "cache" / "opensearch-3-node"
    assert OpenSearchNode(os_cfg).build_dir == tmp_path / "cache" / "engines" / "opensearch3"
    assert es_cfg.version == "9.2.0"
    assert es_cfg.state_dir == tmp_path / "cache" / "elasticsearch-9-node"
    assert ElasticsearchNode(es_cfg).zip_path.name == "elasticsearch-9.2.0.zip"
    assert es_cfg.dist.name == "elasticsearch-9.2.0"


def test_the_command_line_version_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SCOPEGATE_ELASTICSEARCH_VERSION", "9")
    node = es_from_options(version="8")
    assert node.config.version == "8.19.21"
    assert node.config.state_dir == tmp_path / "cache" / "elasticsearch-node"
    assert es_from_options(version="9.1.5", state_dir=tmp_path / "mine").config.state_dir == tmp_path / "mine"


def test_any_exact_elasticsearch_release_of_a_known_major() -> None:
    assert pick("elasticsearch", "9.1.5") == Release("elasticsearch", "9.1.5", 21)
    assert pick("elasticsearch", "8.18.2").java == 17


@pytest.mark.parametrize(
    "engine,asked,says",
    [
        ("opensearch", "4", "OpenSearch 4 is not one the local node runs; choose 2 (2.19.6), 3 (3.9.0)"),
        ("opensearch", "3.1.0", "built for 3.9.0 in major 3 (not 3.1.0)"),
        ("elasticsearch", "7.17.0", "Elasticsearch 7.17.0 is not one the local node runs; choose 8 (8.19.21), 9"),
        ("elasticsearch", "9.latest", "Elasticsearch 9.latest is not a version (N, N.x or N.N.N); choose 8"),
    ],
)
def test_an_unknown_version_is_refused_with_the_choices(engine: str, asked: str, says: str) -> None:
    with pytest.raises(EngineNodeError) as caught:
        pick(engine, asked)
    assert says in str(caught.value)


def test_a_state_folder_per_major() -> None:
    assert state_name(pick("opensearch")) == "opensearch-node"
    assert state_name(pick("opensearch", "3")) == "opensearch-3-node"
    assert state_name(pick("elasticsearch", "9.1.5")) == "elasticsearch-9-node"


def test_java_major_reads_the_jdks_release_file(tmp_path: Path) -> None:
    assert java_major(jdk(tmp_path, "a", "25.0.1") / "bin" / "java") == 25
    assert java_major(jdk(tmp_path, "b", "17.0.15") / "bin" / "java") == 17
    assert java_major(jdk(tmp_path, "c", "1.8.0_402") / "bin" / "java") == 8
    (tmp_path / "d" / "bin").mkdir(parents=True)
    assert java_major(tmp_path / "d" / "bin" / "java") is None


def test_a_release_needing_newer_java_finds_an_installed_jdk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    old = jdk(tmp_path, "jdk-17", "17.0.15") / "bin" / "java"
    jdk(tmp_path, "jdk-21", "21.0.5")
    newest = jdk(tmp_path, "jdk-25", "25.0.1") / "bin" / "java"
    monkeypatch.setattr(_releases, "JVM_ROOTS", (tmp_path,))
    assert java_for(pick("opensearch"), None, str(old)) == str(old)  # today's: the usual java
    assert java_for(pick("opensearch", "3"), None, str(old)) == str(newest)
    assert java_for(pick("elasticsearch", "9"), None, str(newest)) == str(newest)


def test_without_a_new_enough_jdk_the_error_says_what_to_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    old = jdk(tmp_path, "jdk-17", "17.0.15") / "bin" / "java"
    monkeypatch.setattr(_releases, "JVM_ROOTS", (tmp_path,))
    with pytest.raises(EngineNodeError) as caught:
        java_for(pick("elasticsearch", "9"), None, str(old))
    assert str(caught.value) == (
        f"Elasticsearch 9.2.0 needs Java 21+; {old} is Java 17: give --java-home or set "
        "SCOPEGATE_ELASTICSEARCH_JAVA_HOME"
    )


def test_a_java_home_given_is_used_and_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    old, new = jdk(tmp_path, "jdk-17", "17.0.15"), jdk(tmp_path, "jdk-25", "25.0.1")
    assert java_for(pick("opensearch", "3"), new, "/usr/bin/java") == str(new / "bin" / "java")
    monkeypatch.setenv("SCOPEGATE_OPENSEARCH_JAVA_HOME", str(new))
    assert java_for(pick("opensearch", "3"), None, "/usr/bin/java") == str(new / "bin" / "java")
    with pytest.raises(EngineNodeError, match=r"OpenSearch 3.9.0 needs Java 21\+, but .*jdk-17 is Java 17"):
        java_for(pick("opensearch", "3"), old, "/usr/bin/java")
    with pytest.raises(EngineNodeError, match="no bin/java in the Java home"):
        java_for(pick("opensearch", "3"), tmp_path, "/usr/bin/java")
    assert os_from_options(version="3", java_home=str(new)).config.java_command() == str(new / "bin" / "java")


def test_the_engine_commands_take_a_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engine", "opensearch", "status", "--version", "3", "--state-dir", str(tmp_path)]) == 1
    assert "running=False" in capsys.readouterr().out
    assert main(["engine", "elasticsearch", "url", "--version", "9"]) == ExitCode.UNAVAILABLE
    assert capsys.readouterr().err == "scopegate engine elasticsearch url: error: no running node\n"
    assert main(["engine", "opensearch", "status", "--version", "4"]) == ExitCode.UNAVAILABLE
    assert "OpenSearch 4 is not one the local node runs" in capsys.readouterr().err
