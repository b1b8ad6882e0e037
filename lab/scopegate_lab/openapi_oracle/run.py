"""Drive the oracle over one spec: generate arguments, call each tool, catch the request, validate it.

For every operation: translate it with scopegate, generate arguments from the
declaration (deterministic seeds), run the real :class:`OperationTool` (the
same request builder, credentials and HTTP client as in production) against a
loopback catch-all, and validate the request that arrived with openapi-core
and with the independent oracle against the *original* spec. An operation
whose every try is refused by the runtime (arguments valid for the
declaration but not for the spec) is counted as such; one scopegate does not
translate (multipart, binary) is counted as skipped with the reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from scopegate.context import CallContext
from scopegate.errors import ConfigError
from scopegate.openapi.inventory import inventory
from scopegate.openapi.loader import SpecDocument, load_document
from scopegate.openapi.model import SecurityScheme
from scopegate.openapi.runtime.config import OperationPolicy, ToolsetSettings
from scopegate.openapi.runtime.credentials import Credential, FromProvider, Secret
from scopegate.openapi.runtime.retry import RetryPolicy
from scopegate.openapi.runtime.tool import OperationTool, ToolRuntime
from scopegate_lab.openapi_oracle.argsgen import ArgumentGenerator, SpecArgumentGenerator
from scopegate_lab.openapi_oracle.catchall import ArrivedRequest, CatchAll
from scopegate_lab.openapi_oracle.core import CoreValidator
from scopegate_lab.openapi_oracle.independent import IndependentValidator

SECRET = "oracle-credential-0001"


@dataclass
class OperationResult:
    label: str
    status: str  # validated | mismatch | refused | skipped | error
    requests: int = 0
    validated: int = 0
    core_validated: int = 0
    core_not_applicable: int = 0
    core_limits: list[str] = field(default_factory=list)
    guided: bool = False  # validated only with arguments generated from the spec's own schemas
    problems: list[str] = field(default_factory=list)
    reason: str = ""


@dataclass
class SpecReport:
    name: str
    operations: int
    results: list[OperationResult]
    seconds: float

    def counts(self) -> Counter[str]:
        return Counter(r.status for r in self.results)

    def summary(self) -> dict[str, Any]:
        c = self.counts()
        return {
            "spec": self.name,
            "operations": self.operations,
            "checked": len(self.results),
            "requests": sum(r.requests for r in self.results),
            "requests_validated": sum(r.validated for r in self.results),
            "validated_by_openapi_core": sum(r.core_validated for r in self.results),
            "openapi_core_not_applicable": sum(r.core_not_applicable for r in self.results),
            "operations_validated": c["validated"],
            "validated_with_spec_arguments": sum(1 for r in self.results if r.status == "validated" and r.guided),
            "mismatches": c["mismatch"],
            "refused_by_runtime": c["refused"],
            "skipped": c["skipped"],
            "errors": c["error"],
            "skip_reasons": dict(Counter(_short_reason(r.reason) for r in self.results if r.status == "skipped")),
            "openapi_core_limits": dict(Counter(_limit_kind(x) for r in self.results for x in r.core_limits)),
            "seconds": round(self.seconds, 2),
        }


def _limit_kind(text: str) -> str:
    return text.split(" (openapi-core")[0].split(" '")[0].split(" of ")[0]


def _short_reason(reason: str) -> str:
    if "unsupported_media_type" in reason:
        offered = reason.partition("offered: ")[2].removesuffix(")")
        kinds = sorted({t.rsplit("(", 1)[-1].rstrip(")") for t in offered.split(", ")})
        return "body: " + "/".join(kinds)
    return reason[:80]


def _secret(_ctx: CallContext, scheme: SecurityScheme) -> Credential:
    if scheme.type == "http" and scheme.scheme == "basic":
        return Credential(Secret(SECRET), username="oracle")
    return Credential(Secret(SECRET))


def _server_url(tool: OperationTool) -> str:
    servers = tool.operation.servers
    return servers[0].default_url() if servers else "/"


def _seed(label: str, seed: int, attempt: int) -> int:
    digest = hashlib.sha256(f"{label}:{seed}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _choose(rows: list[Any], per_spec: int | None, seed: int) -> list[Any]:
    if per_spec is None or per_spec >= len(rows):
        return rows
    ranked = sorted(rows, key=lambda r: hashlib.sha256(f"{seed}:{r.info.key}".encode()).hexdigest())
    chosen = {r.info.key for r in ranked[:per_spec]}
    return [r for r in rows if r.info.key in chosen]


async def _check_tool(
    tool: OperationTool,
    row: Any,
    server: CatchAll,
    independent: IndependentValidator,
    core: CoreValidator | None,
    *,
    seed: int,
    attempts: int,
    wanted: int,
) -> OperationResult:
    label = row.info.label
    result = OperationResult(label, "refused")
    server_url = _server_url(tool)
    base_path = urlsplit(server_url).path.rstrip("/")
    headers = frozenset(a.argument for a in tool.declaration.binding.arguments if a.location in ("header", "path"))
    for attempt in range(attempts + 2):
        guided = attempt >= attempts  # the declaration's tries were all refused: arguments from the spec itself
        if guided and result.validated:
            break
        if guided:
            spec_gen = SpecArgumentGenerator(
                _seed(label, seed, attempt), optional_rate=0.0 if attempt == attempts else 0.5
            )
            args = spec_gen.for_binding(tool.declaration.binding, tool.builder.hidden)
            result.guided = True
        else:
            gen = ArgumentGenerator(_seed(label, seed, attempt), optional_rate=0.0 if attempt == 0 else 0.6)
            args = gen.generate(tool.parameters_schema(), ascii_only=headers)
        outcome = (await tool.run(args, CallContext(state={}, confirmed=True))).result
        if outcome.get("status") != "ok":
            if outcome.get("error_code") != "BAD_ARGUMENTS":
                result.status, result.reason = "error", f"{outcome.get('error_code')}: {outcome.get('message')}"
                return result
            result.problems.append(f"refused: {outcome.get('problems')}"[:300])
            continue
        arrived = server.take(str(outcome.get("request_id")))
        if arrived is None:
            result.status, result.reason = "error", "the request did not arrive"
            return result
        result.requests += 1
        problems = _validate(tool, arrived, server_url, base_path, server.base_url, independent, core, result)
        if problems:
            result.status = "mismatch"
            result.problems = [*problems, f"args: {args}"[:400]]
            return result
        result.validated += 1
        if result.validated >= wanted:
            break
    if result.validated:
        result.status = "validated"
        result.problems = []
    return result


def _validate(
    tool: OperationTool,
    arrived: ArrivedRequest,
    server_url: str,
    base_path: str,
    origin: str,
    independent: IndependentValidator,
    core: CoreValidator | None,
    result: OperationResult,
) -> list[str]:
    op = tool.operation
    problems = [f"independent: {p}" for p in independent.validate(op.method, op.path, base_path, arrived).problems]
    if core is None:
        result.core_not_applicable += 1
        return problems
    try:
        core_problems = core.validate(server_url, origin, arrived)
    except Exception as exc:  # openapi-core crashed on what it cannot read (a properties map by $ref: DigitalOcean)
        result.core_not_applicable += 1
        result.core_limits.append(f"openapi-core crashed ({type(exc).__name__})")
        return problems
    if not core_problems:
        result.core_validated += 1
        return problems
    limit = core.limits(op.method, op.path, arrived, core_problems)
    ctype = (arrived.header("content-type") or "").split(";")[0].strip().lower()
    said = " ".join(core_problems)
    if (
        limit is None
        and "body" in said.lower()
        and independent.stock_write_rejects(op.method, op.path, arrived.body, ctype)
    ):
        limit = "readOnly behind a $ref or in allOf (openapi-schema-validator's write validator misses it)"
    if limit is not None and not problems:
        # openapi-core cannot judge this construct: the independent oracle decides alone
        result.core_not_applicable += 1
        result.core_limits.append(limit)
        return problems
    return problems + [f"openapi-core: {p}" for p in core_problems]


def check_spec(
    source: Path | dict[str, Any],
    name: str,
    *,
    per_spec: int | None = None,
    seed: int = 0,
    attempts: int = 4,
    requests_per_operation: int = 2,
) -> SpecReport:
    """Run the oracle over ``source`` (a spec file, or a parsed document); all operations unless ``per_spec``."""
    started = time.monotonic()
    doc = load_document(source, allow_external_refs=True) if isinstance(source, Path) else load_document(source)
    rows = list(inventory(doc).rows)
    independent = IndependentValidator(source)
    core = CoreValidator(source) if doc.dialect != "swagger2" else None
    chosen = _choose(rows, per_spec, seed)
    results = asyncio.run(_check_all(doc, chosen, independent, core, seed, attempts, requests_per_operation))
    return SpecReport(name, len(rows), results, time.monotonic() - started)


async def _check_all(
    doc: SpecDocument,
    rows: list[Any],
    independent: IndependentValidator,
    core: CoreValidator | None,
    seed: int,
    attempts: int,
    wanted: int,
) -> list[OperationResult]:
    settings = ToolsetSettings(
        spec=doc.root,
        allow=("*",),
        credentials={key: FromProvider(_secret) for key in doc.security_schemes},
        retry=RetryPolicy(max_attempts=1),
    )
    results: list[OperationResult] = []
    with CatchAll() as server:
        async with httpx.AsyncClient(timeout=10.0, follow_redirects=False) as client:
            runtime = ToolRuntime(client, settings, doc.security_schemes, {})
            for row in rows:
                if row.declaration is None:
                    results.append(OperationResult(row.info.label, "skipped", reason=row.reason))
                    continue
                try:
                    probe = OperationTool(row.declaration, runtime, OperationPolicy(confirm=False), "http://x.test")
                    path = urlsplit(_server_url(probe)).path.rstrip("/")
                    tool = OperationTool(
                        row.declaration, runtime, OperationPolicy(confirm=False, retry=False), server.base_url + path
                    )
                except ConfigError as exc:
                    results.append(OperationResult(row.info.label, "skipped", reason=str(exc)))
                    continue
                try:
                    checked = await _check_tool(
                        tool, row, server, independent, core, seed=seed, attempts=attempts, wanted=wanted
                    )
                except Exception as exc:  # an oracle crash is a finding to report, not a benchmark crash
                    checked = OperationResult(row.info.label, "error", reason=f"{type(exc).__name__}: {exc}"[:300])
                results.append(checked)
    return results
