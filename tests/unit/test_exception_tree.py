"""One exception tree: every exception scopegate defines derives from ScopegateError and lives in
scopegate.errors; the names the package root exported before 0.2 still resolve there, with a warning."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import scopegate
import scopegate.errors
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


def test_every_exception_is_defined_in_scopegate_errors() -> None:
    elsewhere = sorted(name for name in scopegate_exceptions() if not name.startswith("scopegate.errors."))
    assert elsewhere == []
    assert len(scopegate_exceptions()) >= 30


def test_the_root_exports_only_the_base_and_old_names_warn() -> None:
    exported = [name for name in scopegate.__all__ if isinstance(getattr(scopegate, name), type)]
    assert [n for n in exported if issubclass(getattr(scopegate, n), BaseException)] == ["ScopegateError"]
    with pytest.warns(DeprecationWarning, match=r"scopegate\.errors\.ConfigError"):
        old = scopegate.ConfigError  # type: ignore[attr-defined]
    assert old is scopegate.errors.ConfigError


def test_modules_that_defined_exceptions_before_still_export_them() -> None:
    from scopegate.config.builder import FeatureUnavailable
    from scopegate.documents import DocumentError
    from scopegate.openapi.errors import SpecLoadError
    from scopegate.validation import ConfigValidationError

    for cls in (FeatureUnavailable, DocumentError, SpecLoadError, ConfigValidationError):
        assert getattr(scopegate.errors, cls.__name__) is cls


def test_constructors_raise_scopegate_errors_that_old_handlers_still_catch() -> None:
    from scopegate.backends.dsl import index_settings
    from scopegate.openapi.runtime.request import UnsupportedOperation

    with pytest.raises(scopegate.errors.ConfigError) as bad:
        index_settings(analysis="klingon")
    assert isinstance(bad.value, ValueError)  # code that caught ValueError keeps working
    assert issubclass(UnsupportedOperation, ScopegateError)
    missing = scopegate.errors.UnknownNameError("tool", "nope", ["search_tickets"])
    assert isinstance(missing, KeyError) and "search_tickets" in str(missing)
