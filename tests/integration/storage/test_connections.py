"""The kept-alive HTTP connections the S3 calls use (arco.storage.connections), against an HTTP server on loopback
that tells which connection each request came on, and can close them, stall, or answer without a body."""

from __future__ import annotations

import datetime
import ipaddress
import os
import resource
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from arco.storage.connections import ConnectionPool, TimedOut, TransportError
from support.loopback_http import QuietHandler, serving


@dataclass
class Seen:
    requests: list[tuple[str, str, int]] = field(default_factory=list)  # (method, path, client port)
    handlers: list[BaseHTTPRequestHandler] = field(default_factory=list)
    port: int = 0  # the server's

    def ports(self) -> set[int]:
        return {port for _, _, port in self.requests}


@pytest.fixture
def server() -> Iterator[tuple[ConnectionPool, Seen]]:
    seen = Seen()

    class Handler(QuietHandler):
        def answer(self) -> None:
            body_in = self.read_body()
            seen.requests.append((self.command, self.path, self.client_address[1]))
            seen.handlers.append(self)
            if self.path == "/slow":
                time.sleep(1.0)
            if self.path == "/chunked":
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for part in (b"hello ", b"chunked ", b"world"):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.write(b"0\r\n\r\n")
                return
            if self.path == "/until-close":  # no length, no chunks: the body ends with the connection
                self.wfile.write(b"HTTP/1.1 200 OK\r\nETag: \"v2\"\r\n\r\nall of it")
                self.close_connection = True
                return
            if self.path == "/dribble":  # the answer in one-byte writes
                for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Part: a\r\nX-Part: b\r\n\r\nslow!":
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                return
            if self.path == "/garbage":
                self.wfile.write(b"NOT HTTP AT ALL\r\n\r\n")
                self.close_connection = True
                return
            if self.path == "/not-modified":
                self.send_response(304)
                self.send_header("ETag", '"v1"')
                self.end_headers()
                return
            body = b"stored:" + body_in if self.command != "HEAD" else b""
            self.send_response(200)
            self.send_header("ETag", '"v1"')
            self.send_header("Content-Length", str(len(body) if self.command != "HEAD" else 1234))
            if self.path == "/close":
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as port:
        seen.port = port
        # Generous: the server shares this process's interpreter with the clients, and a busy machine stalls it.
        pool = ConnectionPool("http", "127.0.0.1", port, read_timeout_s=10)
        try:
            yield pool, seen
        finally:
            pool.close()


def test_requests_reuse_one_connection(server: tuple[ConnectionPool, Seen]) -> None:
    pool, seen = server
    for i in range(5):
        answer = pool.request("PUT", f"/k{i}", {"If-None-Match": "*"}, b"x" * i)
        assert (answer.status, answer.data, answer.headers.get("etag")) == (200, b"stored:" + b"x" * i, '"v1"')
    assert len(seen.ports()) == 1


def test_a_connection_the_server_closed_while_idle_is_not_reused(server: tuple[ConnectionPool, Seen]) -> None:
    pool, seen = server
    assert pool.request("GET", "/a", {}, None).status == 200
    seen.handlers[-1].connection.shutdown(2)  # the server drops the idle connection (as an idle timeout does)
    time.sleep(0.05)
    assert pool.request("GET", "/b", {}, None).status == 200  # not a TransportError: a fresh connection
    assert len(seen.ports()) == 2


def test_a_connection_the_server_asked_to_close_is_not_reused(server: tuple[ConnectionPool, Seen]) -> None:
    pool, seen = server
    assert pool.request("GET", "/close", {}, None).status == 200
    assert pool.request("GET", "/after", {}, None).status == 200
    assert len(seen.ports()) == 2


def test_answers_without_a_body_and_chunked_ones_are_read_whole(server: tuple[ConnectionPool, Seen]) -> None:
    pool, seen = server
    head = pool.request("HEAD", "/h", {}, None)
    assert (head.status, head.data, head.headers.get("Content-Length")) == (200, b"", "1234")
    assert pool.request("GET", "/not-modified", {"If-None-Match": '"v1"'}, None).status == 304
    assert pool.request("GET", "/chunked", {}, None).data == b"hello chunked world"
    assert pool.request("DELETE", "/d", {}, None).status == 200
    assert len(seen.ports()) == 1  # and the connection stayed usable after each


def test_a_body_that_ends_with_the_connection_is_read_whole_and_the_connection_not_reused(
        server: tuple[ConnectionPool, Seen]) -> None:
    pool, seen = server
    answer = pool.request("GET", "/until-close", {}, None)
    assert (answer.status, answer.data, answer.headers.get("ETag")) == (200, b"all of it", '"v2"')
    assert pool.request("GET", "/after", {}, None).status == 200
    assert len(seen.ports()) == 2


def test_an_answer_arriving_byte_by_byte_is_read_whole_with_repeated_headers_joined(
        server: tuple[ConnectionPool, Seen]) -> None:
    pool, seen = server
    answer = pool.request("GET", "/dribble", {}, None)
    assert (answer.status, answer.data, answer.headers["x-part"]) == (200, b"slow!", "a, b")
    assert pool.request("GET", "/after", {}, None).status == 200
    assert len(seen.ports()) == 1


def test_a_malformed_answer_is_a_transport_error_and_the_connection_is_dropped(
        server: tuple[ConnectionPool, Seen]) -> None:
    pool, seen = server
    with pytest.raises(TransportError):
        pool.request("GET", "/garbage", {}, None)
    assert pool.request("GET", "/after", {}, None).status == 200
    assert len(seen.ports()) == 2


def test_no_answer_in_time_is_a_transport_error_and_the_connection_is_dropped(
        server: tuple[ConnectionPool, Seen]) -> None:
    _, seen = server
    pool = ConnectionPool("http", "127.0.0.1", seen.port, read_timeout_s=0.5)  # /slow answers after 1 s
    try:
        with pytest.raises(TimedOut, match="timed out"):  # a TransportError that is not sent again
            pool.request("GET", "/slow", {}, None)
        assert pool.request("GET", "/next", {}, None).status == 200
    finally:
        pool.close()
    assert len(seen.ports()) == 2


def test_nobody_listening_is_a_transport_error() -> None:
    pool = ConnectionPool("http", "127.0.0.1", 1, connect_timeout_s=0.5)
    with pytest.raises(TransportError, match="cannot connect"):
        pool.request("GET", "/", {}, None)


def test_threads_share_the_pool(server: tuple[ConnectionPool, Seen]) -> None:
    pool, seen = server
    failures: list[BaseException] = []

    def run(n: int) -> None:
        try:
            for i in range(40):
                answer = pool.request("PUT", f"/t{n}/{i}", {}, f"{n}-{i}".encode())
                assert answer.data == f"stored:{n}-{i}".encode()
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not failures
    assert len(seen.requests) == 320 and len(seen.ports()) <= 8  # connections reused, at most one per thread


def test_connections_past_descriptor_1024_are_reused(server: tuple[ConnectionPool, Seen]) -> None:
    """A busy server holds more than select()'s 1024 descriptors: the idle check must still work there."""
    pool, seen = server
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    fillers = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        for i in range(3):
            assert pool.request("GET", f"/{i}", {}, None).status == 200
    finally:
        for fd in fillers:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert len(seen.ports()) == 1


def _self_signed(folder: Path) -> Path:
    """A certificate (and its key, in one PEM file) for 127.0.0.1, signed by itself."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "arco-test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(hours=1))
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                  critical=False)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    pem = folder / "server.pem"
    pem.write_bytes(certificate.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return pem


def test_tls_is_verified_against_the_ca_bundle(tmp_path: Path) -> None:
    pem = _self_signed(tmp_path)

    class Handler(QuietHandler):
        def answer(self) -> None:
            body = b"over tls:" + self.read_body()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pem)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        trusted = ConnectionPool("https", "127.0.0.1", port, ca_file=str(pem), read_timeout_s=5)
        for _ in range(2):  # and the connection is kept for the second
            assert trusted.request("PUT", "/k", {}, b"x").data == b"over tls:x"
        trusted.close()
        # Not in the bundle: the handshake fails, nothing is sent.
        with pytest.raises(TransportError, match="CERTIFICATE_VERIFY_FAILED"):
            ConnectionPool("https", "127.0.0.1", port, connect_timeout_s=5).request("GET", "/k", {}, None)
    finally:
        server.shutdown()
        server.server_close()
