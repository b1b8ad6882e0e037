"""An independent oracle for OpenAPI tools: generate arguments, send, validate what arrived against the spec.

``check_spec(path)`` runs it over one spec (see :mod:`.run`); the pieces are
:mod:`.argsgen` (arguments from the declaration), :mod:`.catchall` (a loopback
server recording raw requests), :mod:`.core` (openapi-core) and
:mod:`.independent` (a second implementation, with no scopegate OpenAPI code).
Needs the dev dependencies (openapi-core, rstr).
"""

from __future__ import annotations

from scopegate_lab.openapi_oracle.run import OperationResult, SpecReport, check_spec

__all__ = ["OperationResult", "SpecReport", "check_spec"]
