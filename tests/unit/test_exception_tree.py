"""One exception tree: every exception scopegate defines derives from ScopegateError and is exported."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import scopegate
from scopegate.errors import ScopegateError

# Modules that need an optional extra or an engine distribution to import.
OPTIONAL = ("scopegate.evals", "scopegate.retrieval")


def scopegate_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(scopegate.__path__, "scopegate."):
        if info.name.startswith(OPTIONAL):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError as exc:  # an optional extra that is not installed
            pytest.skip(f"{info.name} cannot be imported here: {exc}")
        for name, obj in vars(module).items():
            # Private classes (leading underscore) are control flow inside one module and never reach
            # application code; everything else can.
            public = not name.startswith("_")
            if public and inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == info.name:
                found[f"{info.name}.{name}"] = obj
    return found


def test_every_exception_derives_from_scopegate_error() -> None:
    found = scopegate_exceptions()
    assert len(found) >= 10
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, ScopegateError))
    assert outside == []


def test_every_exception_is_exported_from_the_package_root() -> None:
    missing = sorted(
        name for name, cls in scopegate_exceptions().items() if getattr(scopegate, cls.__name__, None) is not cls
    )
    assert missing == []
    assert all(cls.__name__ in scopegate.__all__ for cls in scopegate_exceptions().values())


def test_constructors_raise_scopegate_errors_that_old_handlers_still_catch() -> None:
    from scopegate.backends.dsl import index_settings
    from scopegate.openapi.runtime.request import UnsupportedOperation

    with pytest.raises(scopegate.ConfigError) as bad:
        index_settings(analysis="klingon")
    assert isinstance(bad.value, ValueError)  # code that caught ValueError keeps working
    assert issubclass(UnsupportedOperation, ScopegateError)
    missing = scopegate.UnknownNameError("tool", "nope", ["search_tickets"])
    assert isinstance(missing, KeyError) and "search_tickets" in str(missing)
