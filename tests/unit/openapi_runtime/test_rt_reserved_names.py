"""Parameter smuggling, location by location: no argument may put a server-owned name on the wire.

Each test builds a real binding (loader + translator) for a small spec where ``customer_id`` is bound
from session state (or a credential scheme is defined), then tries to add that name through one
serialisation path. A request is either refused (``ArgumentsInvalid``, the tool's ``BAD_ARGUMENTS``)
or, read back as a server reads it, carries the bound name exactly once, with the bound value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rt_unit_helpers import param, spec_with
from smuggling_oracle import collides
from smuggling_oracle import wire_pairs as wire

from scopegate.errors import ArgumentsInvalid
from scopegate.openapi.errors import TranslationError
from scopegate.openapi.loader import load_document
from scopegate.openapi.runtime.request import BuiltRequest, RequestBuilder, UnsupportedOperation
from scopegate.openapi.runtime.reserved_names import ReservedNames, fold, names_on_wire, undeclared_credential_names
from scopegate.openapi.translate import SENSITIVE_NAMES, translate

BASE = "https://api.example.test/v1"
ALICE = "alice"
OBJECT = {"type": "object", "properties": {"status": {"type": "string"}}}
BOUND = param("customer_id", "query", {"type": "string"}, required=True)
API_KEY_QUERY = {"key": {"type": "apiKey", "in": "query", "name": "api_key"}}
API_KEY_HEADER = {"key": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}
BEARER = {"bearer": {"type": "http", "scheme": "bearer"}}
OAUTH = {"oauth": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://a.test/t", "scopes": {}}}}}
SPELLINGS = [
    "customer_id",
    "CUSTOMER_ID",
    "Customer_Id",
    "customer.id",
    "customer-id",
    "customer id",
    " customer_id",
    "customer_id[]",
    "customer_id[0]",
    "customer_id[x][y]",
    "\uff43\uff55\uff53\uff54\uff4f\uff4d\uff45\uff52_id",  # fullwidth: NFKC folds it to customer_id
    "customer_id\x00.x",  # C parsers stop at the NUL
]


class Guarded:
    """One operation's builder plus its reserved names, as ``OperationTool`` wires them."""

    def __init__(
        self,
        operation: dict[str, Any],
        *,
        bind: Sequence[str] = ("customer_id",),
        checked: Sequence[str] = (),
        schemes: dict[str, Any] | None = None,
        method: str = "get",
    ) -> None:
        spec = spec_with("/orders", method, {"operationId": "op", **operation}, securitySchemes=schemes or {})
        if schemes:
            spec["security"] = [{name: []} for name in schemes]
        doc = load_document(spec)
        self.binding = translate(doc, [i for i in doc.infos() if i.operation_id == "op"]).tools[0].binding
        self.names = ReservedNames.build(
            self.binding,
            bound=bind,
            checked=checked,
            schemes=doc.security_schemes,
            credential_names=undeclared_credential_names(self.binding, SENSITIVE_NAMES),
        )
        self.builder = RequestBuilder(self.binding, BASE, hidden=(*bind, *self.names.shadowed))
        self.bound = {name: ALICE for name in bind}

    def request(self, args: dict[str, Any]) -> BuiltRequest:
        built = self.builder.build(args, bound=self.bound)
        problems = self.names.check(built, {**args, **self.bound})
        if problems:
            raise ArgumentsInvalid(problems)
        return built

    def refused(self, args: dict[str, Any]) -> list[dict[str, str]]:
        with pytest.raises(ArgumentsInvalid) as caught:
            self.request(args)
        return caught.value.problems


def assert_only_bound(built: BuiltRequest, name: str = "customer_id") -> None:
    """Read back as a server reads it (independently of the module under test): the bound value only."""
    values = [v for k, v in wire(built) if collides(k, name)]
    assert values == [ALICE], built.describe()


# ----------------------------------------------------------------- query: form, explode (the default)
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_an_exploded_object_cannot_add_the_bound_name(spelling: str) -> None:
    op = Guarded({"parameters": [BOUND, param("filter", "query", OBJECT)]})
    (problem,) = op.refused({"filter": {spelling: "bob"}})
    assert problem["field"] == "customer_id" and "server sets it" in problem["problem"]


def test_an_exploded_object_keeps_its_own_keys() -> None:
    op = Guarded({"parameters": [BOUND, param("filter", "query", OBJECT)]})
    built = op.request({"filter": {"status": "shipped", "customer": "bob", "customer_idx": "x"}})
    assert_only_bound(built)
    assert ("status", "shipped") in wire(built)


@pytest.mark.parametrize(
    ("schemes", "key"),
    [
        (API_KEY_QUERY, "api_key"),
        (API_KEY_QUERY, "API-KEY"),
        (API_KEY_HEADER, "x-api-key"),  # an API key in a header may not appear as a query name either
        (API_KEY_HEADER, "X_API_KEY"),
        (BEARER, "access_token"),  # RFC 6750: a bearer token may travel as ?access_token=
        (OAUTH, "Access-Token"),
    ],
)
def test_an_exploded_object_cannot_add_a_credential_name(schemes: dict[str, Any] | None, key: str) -> None:
    op = Guarded({"parameters": [param("filter", "query", OBJECT)]}, bind=(), schemes=schemes)
    (problem,) = op.refused({"filter": {key: "attacker-key"}})
    assert "credential" in problem["problem"]


def test_an_exploded_object_cannot_add_an_ownership_checked_name() -> None:
    op = Guarded(
        {"parameters": [param("order_id", "query", {"type": "string"}), param("filter", "query", OBJECT)]},
        bind=(),
        checked=("order_id",),
    )
    assert op.request({"order_id": "o-1", "filter": {"status": "x"}}).url.count("order_id=") == 1
    (problem,) = op.refused({"order_id": "o-1", "filter": {"order_id": "o-2"}})
    assert "checked" in problem["problem"]


def test_a_bound_path_parameter_name_may_not_appear_anywhere_else() -> None:
    spec_op = {"parameters": [param("customer_id", "path", {"type": "string"}), param("filter", "query", OBJECT)]}
    spec = spec_with("/customers/{customer_id}/orders", "get", {"operationId": "op", **spec_op})
    doc = load_document(spec)
    binding = translate(doc, list(doc.infos())).tools[0].binding
    names = ReservedNames.build(binding, bound=("customer_id",))
    builder = RequestBuilder(binding, BASE, hidden=("customer_id",))
    bound = {"customer_id": ALICE}
    ok = builder.build({"filter": {"status": "x"}}, bound=bound)
    assert ok.path == "/customers/alice/orders" and names.check(ok, bound) == []
    smuggled = builder.build({"filter": {"Customer_Id": "bob"}}, bound=bound)
    assert names.check(smuggled, bound)[0]["field"] == "customer_id"


def test_a_bound_exploded_array_may_repeat_its_own_name() -> None:
    ids = param("customer_id", "query", {"type": "array", "items": {"type": "string"}})
    op = Guarded({"parameters": [ids, param("filter", "query", OBJECT)]})
    op.bound = {"customer_id": ["alice", "carol"]}
    built = op.request({"filter": {"status": "x"}})
    assert [v for k, v in wire(built) if k == "customer_id"] == ["alice", "carol"]
    op.refused({"filter": {"customer_id": "bob"}})


# Pieces a hostile key is made of: the name itself, separators, brackets, look-alikes, NUL, delimiters.
_PIECES = st.sampled_from(
    [
        "customer_id",
        "customer",
        "_",
        "id",
        "CUSTOMER",
        "ID",
        ".",
        "-",
        "[",
        "]",
        " ",
        "\t",
        "\x00",
        "\uff43",
        "\u017f",
        "%",
        "&",
        "=",
        ";",
        "\uff3f",
    ]
)
KEYS = st.one_of(
    st.tuples(st.sampled_from(SPELLINGS), st.lists(_PIECES, max_size=3)).map(lambda t: t[0] + "".join(t[1])),
    st.lists(_PIECES, min_size=1, max_size=8).map("".join),
    st.text(min_size=1, max_size=8),
)
_FILTER = Guarded({"parameters": [BOUND, param("filter", "query", OBJECT)]})
_FORM = Guarded(
    {
        "parameters": [BOUND],
        **{
            "requestBody": {
                "required": True,
                "content": {
                    "application/x-www-form-urlencoded": {"schema": {"type": "object", "additionalProperties": True}}
                },
            }
        },
    },
    method="post",
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=st.lists(KEYS, min_size=1, max_size=4), where=st.sampled_from(["query", "form"]))
def test_no_object_key_smuggles_the_bound_name(keys: list[str], where: str) -> None:
    op, arg = (_FILTER, "filter") if where == "query" else (_FORM, "body")
    try:
        built = op.request({arg: {k: "bob" for k in keys}})
    except ArgumentsInvalid:
        return  # refused: nothing is sent
    assert_only_bound(built)


# ----------------------------------------------------------------- query: deepObject, delimited
def test_deep_object_keys_stay_under_their_parameter() -> None:
    op = Guarded({"parameters": [BOUND, param("filter", "query", OBJECT, style="deepObject", explode=True)]})
    built = op.request({"filter": {"customer_id": "bob"}})
    assert ("filter[customer_id]", "bob") in wire(built)
    assert_only_bound(built)  # a top-level customer_id is never added


def test_deep_object_cannot_add_a_bound_bracketed_name() -> None:
    """JSON:API style: ``filter[customer_id]`` is bound, ``filter`` (deepObject) is the model's."""
    bound = param("filter[customer_id]", "query", {"type": "string"}, required=True)
    deep = param("filter", "query", OBJECT, style="deepObject", explode=True)
    page = param("page[size]", "query", {"type": "integer"})
    op = Guarded({"parameters": [bound, deep, page]}, bind=())
    arg = next(a.argument for a in op.binding.arguments if a.original_name == "filter[customer_id]")
    op = Guarded({"parameters": [bound, deep, page]}, bind=(arg,))
    page_arg = next(a.argument for a in op.binding.arguments if a.original_name == "page[size]")
    built = op.request({"filter": {"status": "open"}, page_arg: 5})
    assert ("filter[status]", "open") in wire(built) and ("filter[customer_id]", ALICE) in wire(built)
    op.refused({"filter": {"customer_id": "bob"}})


@pytest.mark.parametrize("style", ["spaceDelimited", "pipeDelimited"])
def test_delimited_arrays_cannot_inject_pairs(style: str) -> None:
    tags = param("tags", "query", {"type": "array", "items": {"type": "string"}}, style=style, explode=False)
    op = Guarded({"parameters": [BOUND, tags]})
    assert_only_bound(op.request({"tags": ["a&customer_id=bob", "customer_id=bob", "#customer_id=bob"]}))
    try:
        built = op.request({"tags": ["x|y z&customer_id=bob"]})  # the delimiter itself inside a value
    except ArgumentsInvalid:
        return  # refused (an OpenAPI-exact serialiser cannot express it): nothing is sent
    assert_only_bound(built)


@pytest.mark.parametrize("style", ["spaceDelimited", "pipeDelimited", "form"])
def test_exploded_objects_of_any_style_never_add_the_bound_name(style: str) -> None:
    op = Guarded({"parameters": [BOUND, param("filter", "query", OBJECT, style=style, explode=True)]})
    try:
        built = op.request({"filter": {"customer_id": "bob"}})
    except ArgumentsInvalid:
        return  # refused: nothing is sent
    assert_only_bound(built)


def test_string_values_cannot_inject_query_pairs() -> None:
    op = Guarded({"parameters": [BOUND, param("q", "query", {"type": "string"})]})
    assert_only_bound(op.request({"q": "x&customer_id=bob#&customer_id=bob"}))


# ----------------------------------------------------------------- headers
def test_an_optional_header_named_like_the_bound_parameter_is_hidden_at_build_time() -> None:
    op = Guarded({"parameters": [BOUND, param("Customer-Id", "header", {"type": "string"})]})
    header_arg = next(a.argument for a in op.binding.arguments if a.location == "header")
    assert op.names.shadowed == {header_arg} and header_arg not in op.builder.model_arguments
    (problem,) = op.refused({header_arg: "bob"})
    assert problem == {"field": header_arg, "problem": "is not an argument of this operation"}
    assert_only_bound(op.request({}))


def test_a_required_header_named_like_the_bound_parameter_is_refused_when_given() -> None:
    header = param("Customer-Id", "header", {"type": "string"}, required=True)
    op = Guarded({"parameters": [BOUND, header]})
    header_arg = next(a.argument for a in op.binding.arguments if a.location == "header")
    assert not op.names.shadowed  # stays visible: the call names the collision
    (problem,) = op.refused({header_arg: "bob"})
    assert problem["field"] == "customer_id" and "server sets it" in problem["problem"]


def test_a_header_spelled_like_the_credential_header_is_refused() -> None:
    """The translation drops ``X-API-Key``; ``X_API_KEY`` reaches a CGI server as the same variable."""
    header = param("X_API_KEY", "header", {"type": "string"}, required=True)
    op = Guarded({"parameters": [header]}, bind=(), schemes=API_KEY_HEADER)
    (header_arg,) = [a.argument for a in op.binding.arguments if a.location == "header"]
    (problem,) = op.refused({header_arg: "attacker-key"})
    assert "credential" in problem["problem"]
    optional = Guarded(
        {"parameters": [param("X_API_KEY", "header", {"type": "string"})]}, bind=(), schemes=API_KEY_HEADER
    )
    assert optional.names.shadowed == {header_arg}


def test_an_object_header_value_is_a_value_not_a_name() -> None:
    op = Guarded({"parameters": [BOUND, param("X-Filter", "header", OBJECT, explode=True)]})
    header_arg = next(a.argument for a in op.binding.arguments if a.location == "header")
    built = op.request({header_arg: {"customer_id": "bob"}})
    assert_only_bound(built)


# ----------------------------------------------------------------- cookies
@pytest.mark.parametrize("required", [True, False])
def test_a_cookie_named_like_the_bound_parameter_is_refused(required: bool) -> None:
    op = Guarded({"parameters": [BOUND, param("Customer_Id", "cookie", {"type": "string"}, required=required)]})
    cookie_arg = next(a.argument for a in op.binding.arguments if a.location == "cookie")
    assert (cookie_arg in op.names.shadowed) is not required
    op.refused({cookie_arg: "bob"})


def test_a_cookie_value_cannot_add_cookies() -> None:
    op = Guarded({"parameters": [BOUND, param("prefs", "cookie", {"type": "string"})]}, schemes=API_KEY_QUERY)
    built = op.request({"prefs": "x; customer_id=bob; api_key=k"})
    assert_only_bound(built)
    assert not [k for k, _ in wire(built) if fold(k) == "api_key"]


def test_an_exploded_cookie_object_never_adds_the_bound_name() -> None:
    op = Guarded({"parameters": [BOUND, param("prefs", "cookie", OBJECT, explode=True)]})
    try:
        built = op.request({"prefs": {"customer_id": "bob"}})
    except ArgumentsInvalid:
        return
    assert_only_bound(built)


def test_the_cookie_header_is_read_as_a_server_reads_it() -> None:
    built = BuiltRequest("GET", BASE, "/orders").with_parts(cookies=(("prefs", "x; customer_id=bob"),))
    names = ReservedNames({"customer_id": "bound"}, {})
    # A serialiser that forgot to encode a cookie value would add a cookie: the check reads the header.
    raw = BuiltRequest("GET", BASE, "/orders", headers=(("Cookie", "prefs=x; customer_id=bob"),))
    assert names.check(built, {}) == []
    assert names.check(raw, {})[0]["field"] == "customer_id"


# ----------------------------------------------------------------- form bodies
FORM_FREE = {
    "requestBody": {
        "required": True,
        "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "additionalProperties": True}}},
    }
}


def form_body(properties: dict[str, Any], encoding: dict[str, Any] | None = None) -> dict[str, Any]:
    media: dict[str, Any] = {"schema": {"type": "object", "properties": properties}}
    if encoding:
        media["encoding"] = encoding
    return {"requestBody": {"required": True, "content": {"application/x-www-form-urlencoded": media}}}


def test_a_free_form_form_body_cannot_add_the_bound_name() -> None:
    op = Guarded({"parameters": [BOUND], **FORM_FREE}, method="post", schemes=API_KEY_QUERY)
    body_args = [a.argument for a in op.binding.arguments if a.location == "body"]
    if not body_args:  # a translation that does not offer a free-form form body: no way to smuggle
        assert op.builder.model_arguments == frozenset()
        return
    (body_arg,) = body_args
    op.refused({body_arg: {"Customer_Id": "bob"}})
    op.refused({body_arg: {"api_key": "k"}})
    assert_only_bound(op.request({body_arg: {"note": "customer_id=bob&x"}}))


def test_a_form_property_named_like_the_bound_query_parameter_is_refused() -> None:
    body = form_body({"customer_id": {"type": "string"}, "note": {"type": "string"}})
    body["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]["required"] = ["customer_id"]
    op = Guarded({"parameters": [BOUND], **body}, method="post")
    body_arg = next(
        a.argument for a in op.binding.arguments if a.original_name == "customer_id" and a.location != "query"
    )
    (problem,) = op.refused({body_arg: "bob", "note": "x"})
    assert problem["field"] == "customer_id"


def test_a_bound_form_field_stays_single() -> None:
    op = Guarded(form_body({"customer_id": {"type": "string"}, "meta": OBJECT}), method="post")
    built = op.request({"meta": {"customer_id": "bob"}})  # an object field is sent as JSON text
    assert_only_bound(built)


def test_a_form_property_exploded_by_its_encoding_cannot_add_the_bound_name() -> None:
    body = form_body({"customer_id": {"type": "string"}, "meta": OBJECT}, {"meta": {"style": "form", "explode": True}})
    op = Guarded(body, method="post")
    try:
        built = op.request({"meta": {"customer_id": "bob"}})
    except ArgumentsInvalid:
        return
    assert_only_bound(built)


# ----------------------------------------------------------------- JSON bodies
JSON_FREE = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"type": "object", "additionalProperties": True}}},
    }
}


def test_a_free_form_json_body_cannot_add_the_bound_name_at_top_level() -> None:
    op = Guarded({"parameters": [BOUND], **JSON_FREE}, method="post", schemes=API_KEY_QUERY)
    body_arg = next(a.argument for a in op.binding.arguments if a.location == "body")
    op.refused({body_arg: {"customer_id": "bob"}})  # Laravel/Rails merge JSON keys with the query
    op.refused({body_arg: {"API_KEY": "t"}})
    built = op.request({body_arg: {"meta": {"customer_id": "bob"}}})  # nested: not a parameter
    assert_only_bound(built)


def test_a_bound_json_property_is_sent_once() -> None:
    body = {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"type": "object", "properties": {"customer_id": {"type": "string"}, "note": {}}}
                }
            },
        }
    }
    op = Guarded(body, method="post")
    built = op.request({"note": "x"})
    assert built.body == b'{"customer_id":"alice","note":"x"}'


def test_json_body_keys_are_read_with_duplicates() -> None:
    built = BuiltRequest(
        "POST", BASE, "/orders", body=b'{"customer_id":"alice","customer_id":"bob"}', content_type="application/json"
    )
    problems = ReservedNames({"customer_id": "bound"}, {"cid": "customer_id"}).check(built, {"cid": ALICE})
    assert problems and problems[0]["field"] == "customer_id"


# ----------------------------------------------------------------- multipart
def test_credential_parameters_the_translation_kept_from_the_model_stay_reserved() -> None:
    """A declared ``api_key`` query parameter is the scheme's input: not an argument, and not a key either."""
    key = param("api_key", "query", {"type": "string"})
    op = Guarded({"parameters": [key, param("filter", "query", OBJECT)]}, bind=(), schemes=API_KEY_QUERY)
    assert all(a.original_name != "api_key" for a in op.binding.arguments)
    (problem,) = op.refused({"filter": {"api_key": "k"}})
    assert "credential" in problem["problem"]


def test_credential_like_names_are_reserved_unless_the_operation_declares_them() -> None:
    """Without any scheme, ``access_token`` stays reserved; a secret-looking input the operation
    declares itself (``password``: sent, marked sensitive) is its own, not reserved."""
    own = param("password", "query", {"type": "string"})
    op = Guarded({"parameters": [own, param("filter", "query", OBJECT)]}, bind=())
    assert "password" not in op.names.reserved and "access_token" in op.names.reserved
    (problem,) = op.refused({"filter": {"Access-Token": "x"}})
    assert "credential" in problem["problem"]
    assert ("password", "p") in wire(op.request({"password": "p"}))


def test_an_operations_own_secret_input_is_not_a_reserved_credential_name() -> None:
    """Discord's ``access_token`` body field is the operation's input (declared, sensitive), not a
    credential of the spec, even where the spec has a bearer scheme: its argument sends it once."""
    own = param("access_token", "query", {"type": "string"})
    op = Guarded({"parameters": [own, param("filter", "query", OBJECT)]}, bind=(), schemes=BEARER)
    assert "access_token" not in op.names.reserved and "api_key" in op.names.reserved
    assert ("access_token", "user-oauth-token") in wire(op.request({"access_token": "user-oauth-token"}))


def test_multipart_bodies_are_not_sent_at_all() -> None:
    body = {
        "requestBody": {
            "required": True,
            "content": {"multipart/form-data": {"schema": {"type": "object", "properties": {"note": {}}}}},
        }
    }
    spec = spec_with("/orders", "post", {"operationId": "op", "parameters": [BOUND], **body})
    doc = load_document(spec)
    with pytest.raises((UnsupportedOperation, TranslationError)):  # refused by the builder or the translation
        binding = translate(doc, list(doc.infos())).tools[0].binding
        RequestBuilder(binding, BASE, hidden=("customer_id",))


def test_multipart_field_names_are_read_from_the_body() -> None:
    """Should a serialiser ever send multipart, its field names are checked like form fields."""
    body = (
        b'--XyZ\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n'
        b'--XyZ\r\nContent-Disposition: form-data; name="Customer_ID"\r\n\r\nbob\r\n--XyZ--\r\n'
    )
    built = BuiltRequest(
        "POST",
        BASE,
        "/orders",
        query=(("customer_id", ALICE),),
        body=body,
        content_type="multipart/form-data; boundary=XyZ",
    )
    assert names_on_wire(built) == ["customer_id", "note", "Customer_ID"]
    problems = ReservedNames({"customer_id": "bound"}, {"cid": "customer_id"}).check(built, {"cid": ALICE})
    assert problems and problems[0]["field"] == "customer_id"


# ----------------------------------------------------------------- folding
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_fold_reads_every_spelling_as_the_same_name(spelling: str) -> None:
    assert fold(spelling).split("[")[0] == "customer_id"


def test_fold_keeps_bracketed_names_apart() -> None:
    assert fold("filter[status]") != fold("filter[customer_id]")
    assert fold("ids[]") == "ids"
