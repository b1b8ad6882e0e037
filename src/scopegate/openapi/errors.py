"""Exceptions raised while loading, selecting and translating OpenAPI specs.

They are defined in :mod:`scopegate.errors` (the one exception tree) and re-exported here for code that
imported them from this module. All derive from :class:`scopegate.errors.ConfigError`: a bad spec or a bad
allowlist is a configuration problem found at construction time, never at call time.
"""

from __future__ import annotations

from scopegate.errors import ConfigError as ConfigError
from scopegate.errors import MissingOperationsError as MissingOperationsError
from scopegate.errors import OpenAPIError as OpenAPIError
from scopegate.errors import RefError as RefError
from scopegate.errors import SelectionError as SelectionError
from scopegate.errors import SpecLoadError as SpecLoadError
from scopegate.errors import TranslationError as TranslationError
