"""Header names with a fixed meaning for every OpenAPI tool (translation and runtime agree on these)."""

from __future__ import annotations

# Set by the runtime itself; a header parameter of this name is not declared (OpenAPI also says
# Accept, Content-Type and Authorization header parameters "SHALL be ignored").
RUNTIME_HEADERS = frozenset({"accept", "content-type", "content-length", "user-agent"})

# Never set from a model's argument, whatever the spec says: they carry authority or routing.
_FORBIDDEN_GROUPS = (
    "authorization proxy-authorization cookie set-cookie",  # authority
    "host forwarded x-forwarded-for x-forwarded-host x-forwarded-proto x-forwarded-port x-real-ip",  # routing
    "content-length transfer-encoding connection keep-alive te trailer upgrade expect",  # framing
    "x-http-method-override x-http-method x-method-override x-original-url x-rewrite-url",  # rewriting
)
FORBIDDEN_HEADERS = frozenset(name for group in _FORBIDDEN_GROUPS for name in group.split())
