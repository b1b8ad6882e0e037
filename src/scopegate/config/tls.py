"""Check a backend's TLS files when the config is built, not on the first search.

The engine clients load ``ca_certs``, ``client_cert`` and ``client_key`` when they open their first
connection; a key that does not match its certificate, or a file that is no PEM, then fails every call as
an unexpected error, and an encrypted key makes OpenSSL prompt on the terminal. Loading them here turns each
into a :class:`ConfigError` at ``scopegate check`` and server start. The messages name the config keys and
the TLS library's reason, never the files' paths or contents.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from scopegate.errors import ConfigError


def _reason(exc: ssl.SSLError | OSError) -> str:
    if isinstance(exc, ssl.SSLError):
        return str(exc.reason or exc.library or "unreadable")
    return exc.strerror or type(exc).__name__  # never str(exc): it carries the path


def check_tls_files(ca_certs: Path | None, client_cert: Path | None, client_key: Path | None) -> None:
    """Load the files as the clients will; raise :class:`ConfigError` naming the key that is wrong."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca_certs is not None:
        try:
            context.load_verify_locations(cafile=ca_certs)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(f"ca_certs: not a PEM CA bundle the TLS library can read ({_reason(exc)})") from None
    if client_cert is None:
        return
    asked: list[bool] = []

    def no_password() -> bytes:
        asked.append(True)  # never let OpenSSL prompt on the terminal
        return b""

    try:
        context.load_cert_chain(client_cert, client_key, password=no_password)
    except (ssl.SSLError, OSError) as exc:
        if asked:
            raise ConfigError(
                "client_key: the private key is encrypted; give the engine clients an unencrypted key file "
                "readable only by the server's user"
            ) from None
        if isinstance(exc, ssl.SSLError) and exc.reason == "KEY_VALUES_MISMATCH":
            raise ConfigError("client_key: the private key does not match client_cert") from None
        keys = "client_cert" if client_key is None else "client_cert/client_key"
        raise ConfigError(f"{keys}: not a PEM certificate and private key ({_reason(exc)})") from None
