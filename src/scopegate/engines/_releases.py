"""Which engine versions the local nodes run, and the Java each one needs.

A release is picked by major (``3``, ``3.x``) or by exact version, from the command line's
``--version`` or ``SCOPEGATE_OPENSEARCH_VERSION`` / ``SCOPEGATE_ELASTICSEARCH_VERSION``; nothing set
keeps today's defaults (OpenSearch 2.19.6 and Elasticsearch 8.19.21 on Java 17). OpenSearch is built
from Maven artifacts by a launcher pinned to one version per major; Elasticsearch's integ-test zip
exists for many versions, so any exact 8.x or 9.x may be asked for. The Java is ``--java-home`` or
``SCOPEGATE_<ENGINE>_JAVA_HOME``; else the usual ``java`` when it is new enough; else the newest JDK
under ``/usr/lib/jvm`` that is.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from scopegate.errors import EngineNodeError

JVM_ROOTS = (Path("/usr/lib/jvm"),)


@dataclass(frozen=True)
class Release:
    engine: str  # "opensearch" | "elasticsearch"
    version: str  # exact, e.g. "3.9.0"
    java: int  # the oldest Java major it runs on
    launcher: str = ""  # OpenSearch: the launcher folder under engines/launchers

    @property
    def major(self) -> str:
        return self.version.split(".", 1)[0]


RELEASES: dict[str, dict[str, Release]] = {
    "opensearch": {
        "2": Release("opensearch", "2.19.6", 17, "opensearch"),
        "3": Release("opensearch", "3.9.0", 21, "opensearch3"),
    },
    "elasticsearch": {
        "8": Release("elasticsearch", "8.19.21", 17),
        "9": Release("elasticsearch", "9.2.0", 21),
    },
}
DEFAULT_MAJOR = {"opensearch": "2", "elasticsearch": "8"}
LABELS = {"opensearch": "OpenSearch", "elasticsearch": "Elasticsearch"}
_EXACT = re.compile(r"\d+\.\d+\.\d+")


def version_env(engine: str) -> str:
    return f"SCOPEGATE_{engine.upper()}_VERSION"


def java_home_env(engine: str) -> str:
    return f"SCOPEGATE_{engine.upper()}_JAVA_HOME"


def pick(engine: str, requested: str | None = None) -> Release:
    """The release ``requested`` names (a major, ``N.x`` or an exact version), else the environment's,
    else the default."""
    text = (requested or os.environ.get(version_env(engine)) or DEFAULT_MAJOR[engine]).strip().lower()
    known = RELEASES[engine]
    major = text.removesuffix(".x").split(".", 1)[0]
    release = known.get(major)
    choices = ", ".join(f"{m} ({r.version})" for m, r in known.items())
    if release is None:
        raise EngineNodeError(f"{LABELS[engine]} {text} is not one the local node runs; choose {choices}")
    if text in {major, f"{major}.x", release.version}:
        return release
    if engine == "elasticsearch" and _EXACT.fullmatch(text):
        return replace(release, version=text)  # the integ-test zip is published for each release
    if engine == "elasticsearch":
        raise EngineNodeError(f"Elasticsearch {text} is not a version (N, N.x or N.N.N); choose {choices}")
    raise EngineNodeError(
        f"the local OpenSearch node is built for {release.version} in major {major} (not {text}); choose {choices}"
    )


def is_default(release: Release) -> bool:
    return release == RELEASES[release.engine][DEFAULT_MAJOR[release.engine]]


def state_name(release: Release) -> str:
    """The state folder's name: today's for the default release, one per major otherwise (a node's data
    folder is never opened by another major)."""
    return f"{release.engine}-node" if is_default(release) else f"{release.engine}-{release.major}-node"


def java_major(java: str | Path) -> int | None:
    """The major version of the JDK that ``java`` belongs to (its ``release`` file), or None if unknown."""
    home = Path(os.path.realpath(java)).parents[1]
    try:
        text = (home / "release").read_text(errors="replace")
    except OSError:
        return None
    found = re.search(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', text, re.MULTILINE)
    if found is None:
        return None
    first = int(found.group(1))
    return int(found.group(2) or 0) if first == 1 else first  # "1.8.0" is Java 8


def _installed_jdks() -> list[tuple[int, Path]]:
    found = []
    for root in JVM_ROOTS:
        for home in sorted(root.glob("*")) if root.is_dir() else ():
            java = home / "bin" / "java"
            major = java_major(java) if java.is_file() and not home.is_symlink() else None
            if major is not None:
                found.append((major, java))
    return sorted(found)


def java_for(release: Release, java_home: str | Path | None, fallback: str) -> str:
    """The ``java`` that runs ``release``: ``java_home`` (else ``SCOPEGATE_<ENGINE>_JAVA_HOME``) when given,
    else ``fallback`` (the usual ``java``) when new enough, else the newest JDK installed that is."""
    label = f"{LABELS[release.engine]} {release.version}"
    home = java_home or os.environ.get(java_home_env(release.engine))
    if home:
        java = Path(home).expanduser() / "bin" / "java"
        if not java.is_file():
            raise EngineNodeError(f"no bin/java in the Java home {home} given for {label}")
        major = java_major(java)
        if major is not None and major < release.java:
            raise EngineNodeError(f"{label} needs Java {release.java}+, but {home} is Java {major}")
        return str(java)
    major = java_major(fallback) if Path(fallback).is_file() else None
    if major is None or major >= release.java:
        return fallback
    newer = [java for found, java in _installed_jdks() if found >= release.java]
    if not newer:
        raise EngineNodeError(
            f"{label} needs Java {release.java}+; {fallback} is Java {major}: "
            f"give --java-home or set {java_home_env(release.engine)}"
        )
    return str(newer[-1])
