"""A backend's TLS settings, checked when the config is built rather than on the first search.

The engine clients load ``ca_certs``, ``client_cert`` and ``client_key`` when they open their first
connection; a key that does not match its certificate, or a file that is no PEM, then fails every call as
an unexpected error, and an encrypted key makes OpenSSL prompt on the terminal. Loading them here turns each
into a :class:`ConfigError` at ``scopegate check`` and server start. An encrypted key is opened with its
passphrase (``client_key_password``) into an SSL context the clients take as is. The messages name the
config keys and the TLS library's reason, never the files' paths, contents or the passphrase.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

from scopegate.errors import ConfigError


def _reason(exc: ssl.SSLError | OSError) -> str:
    if isinstance(exc, ssl.SSLError):
        return str(exc.reason or exc.library or "unreadable")
    return exc.strerror or type(exc).__name__  # never str(exc): it carries the path


def tls_context(
    ca_certs: Path | None,
    client_cert: Path | None,
    client_key: Path | None,
    *,
    key_password: str | None = None,
    verify: bool = True,
) -> ssl.SSLContext:
    """The files loaded as the clients load them; :class:`ConfigError` naming the key that is wrong."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if ca_certs is not None:
        try:
            context.load_verify_locations(cafile=ca_certs)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(f"ca_certs: not a PEM CA bundle the TLS library can read ({_reason(exc)})") from None
    elif verify:
        context.load_default_certs()
    if client_cert is None:
        return context
    asked: list[bool] = []

    def passphrase() -> bytes:
        asked.append(True)  # never let OpenSSL prompt on the terminal
        return (key_password or "").encode()

    try:
        context.load_cert_chain(client_cert, client_key, password=passphrase)
    except (ssl.SSLError, OSError) as exc:
        if asked and key_password is None:
            raise ConfigError(
                "client_key: the private key is encrypted; give its passphrase in client_key_password "
                "(use ${ENV}) or client_key_password_file"
            ) from None
        if asked:
            raise ConfigError("client_key_password: the passphrase does not open client_key") from None
        if isinstance(exc, ssl.SSLError) and exc.reason == "KEY_VALUES_MISMATCH":
            raise ConfigError("client_key: the private key does not match client_cert") from None
        keys = "client_cert" if client_key is None else "client_cert/client_key"
        raise ConfigError(f"{keys}: not a PEM certificate and private key ({_reason(exc)})") from None
    return context


def client_tls_options(
    verify: bool,
    ca_certs: Path | None,
    client_cert: Path | None,
    client_key: Path | None,
    key_password: str | None,
) -> dict[str, Any]:
    """The engine clients' TLS keyword arguments, after :func:`tls_context` checked the files: the files as
    given; with a passphrase, the SSL context holding the opened key instead (the clients take no passphrase)."""
    context = tls_context(ca_certs, client_cert, client_key, key_password=key_password, verify=verify)
    if key_password is not None and client_cert is not None:
        return {"ssl_context": context}
    return {
        "verify_certs": verify,
        "ca_certs": str(ca_certs) if ca_certs is not None else None,
        "client_cert": str(client_cert) if client_cert is not None else None,
        "client_key": str(client_key) if client_key is not None else None,
    }
