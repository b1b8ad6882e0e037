"""A TLS front for a real engine node: certificates made at test time, a listener on 127.0.0.1 that requires a
client certificate and relays the decrypted bytes to the node (as a TLS-terminating proxy in front of a
cluster does). Imported by module name from the integration tests.

Each connection's handshake either completes (then the bytes flow both ways until one side closes) or is
refused; the relay counts both, so a test can prove that nothing reached the node."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)
_CA_USAGE = x509.KeyUsage(
    digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False, key_encipherment=False,
    data_encipherment=False, key_agreement=False, encipher_only=False, decipher_only=False,
)  # fmt: skip


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)
    return path


def _write_cert(cert: x509.Certificate, path: Path) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


@dataclass(frozen=True)
class Authority:
    """A certificate authority that signs server and client certificates."""

    name: str
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    cert_file: Path

    @classmethod
    def create(cls, folder: Path, name: str) -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_CA_USAGE, critical=True)
            .sign(key, hashes.SHA256())
        )
        return cls(name, key, cert, _write_cert(cert, folder / f"{name}-ca.pem"))

    def issue(self, folder: Path, name: str, *, server: bool) -> tuple[Path, Path]:
        """A leaf certificate and its key, as PEM files: for 127.0.0.1 (server) or a client."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + _DAY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if server:
            names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return _write_cert(cert, folder / f"{name}.pem"), _write_key(key, folder / f"{name}-key.pem")


class TlsRelay:
    """Listens on 127.0.0.1 with TLS, requires a client certificate signed by ``client_ca``, and relays each
    accepted connection's bytes to ``upstream`` (host, port)."""

    def __init__(self, upstream: tuple[str, int], server_cert: Path, server_key: Path, client_ca: Path) -> None:
        self.upstream = upstream
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(server_cert, server_key)
        self.context.verify_mode = ssl.CERT_REQUIRED
        self.context.load_verify_locations(client_ca)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)  # accept() wakes up to see close()
        self.port = int(self.listener.getsockname()[1])
        self.accepted = 0  # handshakes that completed (a client certificate the CA signed)
        self.refused = 0  # handshakes that failed
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _count(self, accepted: bool) -> None:
        with self._lock:
            if accepted:
                self.accepted += 1
            else:
                self.refused += 1

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(30)
        secure = self.context.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        try:
            secure.do_handshake()
        except (ssl.SSLError, OSError):
            self._count(False)
            _linger(socket.socket(fileno=secure.detach()))
            return
        self._count(True)
        try:
            upstream = socket.create_connection(self.upstream, timeout=30)
        except OSError:
            secure.close()
            return
        back = threading.Thread(target=_pump, args=(upstream, secure), daemon=True)
        back.start()
        _pump(secure, upstream)
        back.join(timeout=30)

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=10)
        self.listener.close()


def _linger(conn: socket.socket) -> None:
    """Close after a refused handshake as a TLS server does: the alert already sent, then a FIN, and what the
    client still sends read and dropped, so the client reads the alert instead of a reset."""
    with contextlib.suppress(OSError):
        conn.settimeout(5)
        conn.shutdown(socket.SHUT_WR)
        while conn.recv(65536):
            pass
    conn.close()


def _pump(source: socket.socket, target: socket.socket) -> None:
    """Copy bytes from ``source`` to ``target`` until either side closes; then close both."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


@dataclass(frozen=True)
class Pki:
    """The certificates of a mutual-TLS test, as PEM files."""

    ca: Path  # signed the node's (relay's) certificate and the agent's client certificate
    stranger_ca: Path  # signed nothing the cluster trusts
    server: tuple[Path, Path]
    client: tuple[Path, Path]
    intruder: tuple[Path, Path]  # a client certificate from the stranger CA
    encrypted_key: Path  # the agent's key, encrypted with ``passphrase``
    passphrase: str

    @property
    def secrets(self) -> list[str]:
        """What must never be printed: the client keys' paths, a line of each key's body, the passphrase."""
        out = [self.passphrase]
        for key in (self.client[1], self.intruder[1], self.encrypted_key):
            out += [str(key), key.name, key.read_text().splitlines()[1]]
        return out


def make_pki(folder: Path, passphrase: str) -> Pki:
    ca, stranger = Authority.create(folder, "cluster"), Authority.create(folder, "stranger")
    client = ca.issue(folder, "agent", server=False)
    key = serialization.load_pem_private_key(client[1].read_bytes(), password=None)
    encrypted = folder / "agent-encrypted-key.pem"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(passphrase.encode()),
        )
    )
    server = ca.issue(folder, "node", server=True)
    intruder = stranger.issue(folder, "intruder", server=False)
    return Pki(ca.cert_file, stranger.cert_file, server, client, intruder, encrypted, passphrase)


@contextlib.contextmanager
def relay_in_front(pki: Pki, node_url: str) -> Iterator[TlsRelay]:
    """A relay that requires ``pki``'s client certificate, forwarding to the node at ``node_url``."""
    node = urlsplit(node_url)
    assert node.hostname is not None and node.port is not None
    front = TlsRelay((node.hostname, node.port), *pki.server, client_ca=pki.ca)
    try:
        yield front
    finally:
        front.close()
