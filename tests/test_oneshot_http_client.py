"""``prove --server``'s own HTTP/1.1 client (pipeline/oneshot/http_client.py) against a scripted
loopback server: the framings of an answer, keep-alive and the one reconnect, and each failure
as ``prove_remote`` reports it (the exit codes follow from the error classes, test_prove_command)."""
from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading

import pytest

from pipeline.formats.key_fingerprint import zkey_fingerprint
from pipeline.oneshot.http_client import Connection, ProtocolError, split_url
from pipeline.oneshot.remote import RemoteJobFailed, ServerRefused, ServerUnreachable, _Server, prove_remote
from pipeline.oneshot.timeline import Timeline
from tests.conftest import REPO, fixture_dir

FOLDER = fixture_dir("bn128", "multiplier")
KEY, WTNS = str(FOLDER / "circuit_final.zkey"), str(FOLDER / "witness.wtns")
CLOSE = None  # in a script: read the request, close the connection without answering


def answer(status: str, body: bytes, *headers: str) -> bytes:
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json", *headers]
    if not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers):
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def chunked(status: str, body: bytes, *headers: str) -> bytes:
    """``body`` in chunks of 7 bytes, one with an extension, and a trailer field."""
    chunks = [body[i:i + 7] for i in range(0, len(body), 7)]
    coded = b"".join(f"{len(c):x}{';x=1' if i == 1 else ''}\r\n".encode() + c + b"\r\n" for i, c in enumerate(chunks))
    return answer(status, coded + b"0\r\nX-Trailer: t\r\n\r\n", "Transfer-Encoding: chunked")


class ScriptedServer:
    """A loopback server in a thread: each request gets the next answer of the script (``CLOSE``:
    the connection is closed instead). ``per_connection``: requests answered on one connection
    before the server closes it, unannounced (None: as many as the client sends)."""

    def __init__(self, script: list[bytes | None], per_connection: int | None = None) -> None:
        self.script = list(script)
        self.per_connection = per_connection
        self.requests: list[tuple[int, bytes, bytes]] = []  # (connection number, head, body)
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.script:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # close(): the test is over
                return
            self.connections += 1
            with conn, conn.makefile("rb") as reader:
                served = 0
                while self.script and (self.per_connection is None or served < self.per_connection):
                    head = read_head(reader)
                    if not head:
                        break  # the client closed the connection
                    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                                   if line.lower().startswith(b"content-length:")), 0)
                    self.requests.append((self.connections, head, reader.read(length)))
                    reply = self.script.pop(0)
                    if reply is CLOSE:
                        break
                    conn.sendall(reply)
                    served += 1

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the thread's accept (close alone does not)
        self.listener.close()
        self.thread.join(timeout=5)


def read_head(reader) -> bytes:
    """A request's head up to its blank line; b"" at the connection's end."""
    lines = []
    while (line := reader.readline()) not in (b"", b"\r\n"):
        lines.append(line)
    return b"".join(lines)


@pytest.fixture
def scripted():
    servers = []

    def start(script, per_connection=None) -> ScriptedServer:
        servers.append(ScriptedServer(script, per_connection))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def connection(server: ScriptedServer, timeout_s: float = 10.0) -> Connection:
    scheme, host, port, _ = split_url(server.url)
    return Connection(scheme, host, port, timeout_s)


def done_job(proof: dict, public: list) -> dict:
    return {"job_id": "j1", "state": "done", "proofs": [{"proof": proof, "public_signals": public}]}


def job_script(proof: dict, public: list) -> list[bytes]:
    """The answers of one ``prove_remote`` whose proof takes longer than the submit's wait: the
    job still running, then the finished job."""
    return [chunked("202 Accepted", b'{"job_id": "j1", "state": "running"}'),
            answer("200 OK", json.dumps(done_job(proof, public)).encode())]


def error(status: str, code: str, message: str) -> bytes:
    return answer(status, json.dumps({"error": {"code": code, "message": message}}).encode())


# -- framing and keep-alive ------------------------------------------------------------------------
def test_a_content_length_and_a_chunked_answer_come_whole_on_one_connection(scripted):
    body = json.dumps({"keys": [{"key_id": "k" * 40}]}).encode()
    server = scripted([answer("200 OK", body), chunked("200 OK", body), b"HTTP/1.1 204 No Content\r\n\r\n"])
    conn = connection(server)
    assert conn.request("GET", "/v1/keys", {"Authorization": "Bearer t"}) == (200, body)
    assert conn.request("POST", "/v1/jobs", {"Content-Type": "a/b"}, b"x" * 100) == (200, body)
    assert conn.request("GET", "/none", {}) == (204, b"")
    conn.close()
    assert server.connections == 1
    heads = [head for _, head, _ in server.requests]
    assert heads[0].startswith(b"GET /v1/keys HTTP/1.1\r\n") and b"Authorization: Bearer t" in heads[0]
    assert f"Host: {server.url[7:]}".encode() in heads[0] and b"Content-Length" not in heads[0]
    assert b"Content-Length: 100" in heads[1] and server.requests[1][2] == b"x" * 100


def test_an_answer_framed_by_the_connections_end_and_connection_close_open_a_new_connection(scripted):
    server = scripted([b"HTTP/1.1 200 OK\r\n\r\n{\"a\": 1}", answer("200 OK", b"{}", "Connection: close"),
                       answer("200 OK", b"[]")], per_connection=1)
    conn = connection(server)
    assert conn.request("GET", "/a", {}) == (200, b'{"a": 1}')
    assert conn.request("GET", "/b", {}) == (200, b"{}")
    assert conn.request("GET", "/c", {}) == (200, b"[]")
    assert server.connections == 3 and len(server.requests) == 3  # each closed on purpose: no retry


def test_a_keep_alive_connection_the_server_closed_between_requests_is_reopened_once(scripted):
    """The server closes each connection after one answer, unannounced (an idle timeout): the
    whole proof still comes back, each request sent once more on a new connection."""
    proof, public = {"pi_a": ["1", "2", "1"], "protocol": "groth16"}, ["33"]
    server = scripted(job_script(proof, public), per_connection=1)
    got_proof, got_public, job = prove_remote(server.url, KEY, WTNS, "tok", Timeline())
    assert (got_proof, got_public, job["job_id"]) == (proof, public, "j1")
    assert server.connections == 2 and [n for n, _, _ in server.requests] == [1, 2]
    assert server.requests[1][1].startswith(b"GET /v1/jobs/j1?wait=")


def test_one_request_submits_the_witness_by_the_keys_fingerprint_and_brings_the_proof(scripted):
    proof, public = {"pi_a": ["1", "2", "1"]}, ["33"]
    server = scripted([answer("202 Accepted", json.dumps(done_job(proof, public)).encode())])
    assert prove_remote(server.url, KEY, WTNS, "tok", Timeline())[:2] == (proof, public)
    [(_, head, body)] = server.requests
    target = head.split(b" ")[1].decode()
    assert target.startswith("/v1/jobs?") and f"key_fingerprint={zkey_fingerprint(KEY)}" in target
    assert "wait=30" in target and "request_id=" in target and "priority=high" in target
    assert b"Content-Type: application/octet-stream" in head and body == open(WTNS, "rb").read()


def test_a_server_without_the_one_request_submit_gets_the_three_requests_of_before(scripted):
    """A 415 for the .wtns body (a server from before it): the keys, a multipart job, the long poll."""
    proof, public = {"pi_a": ["1", "2", "1"]}, ["33"]
    keys = {"keys": [{"key_id": "mult_bn128", "fingerprint": zkey_fingerprint(KEY)}]}
    server = scripted([error("415 Unsupported Media Type", "unsupported_media_type", "send multipart/form-data"),
                       answer("200 OK", json.dumps(keys).encode()),
                       chunked("202 Accepted", b'{"job_id": "j1", "state": "queued"}'),
                       answer("200 OK", json.dumps(done_job(proof, public)).encode())])
    assert prove_remote(server.url, KEY, WTNS, "tok", Timeline())[:2] == (proof, public)
    heads = [head.split(b"\r\n")[0] for _, head, _ in server.requests]
    assert heads[1:] == [b"GET /v1/keys HTTP/1.1", b"POST /v1/jobs HTTP/1.1", b"GET /v1/jobs/j1?wait=30.0 HTTP/1.1"]
    submit = server.requests[2][2]
    assert b'name="key_id"\r\n\r\nmult_bn128' in submit and b'filename="witness.wtns"' in submit
    first = re.search(rb"request_id=([0-9a-f]{32})", heads[0]).group(1)
    assert b'name="request_id"\r\n\r\n' + first in submit  # the same request_id: a retry finds the first job


def test_a_server_that_does_not_serve_the_key_is_refused_naming_the_key_file(scripted):
    server = scripted([error("404 Not Found", "unknown_key", "unknown key with fingerprint 'x' (known: other)")])
    with pytest.raises(ServerRefused, match=f"does not serve the key {KEY} .*known: other.*without --server"):
        prove_remote(server.url, KEY, WTNS, "", Timeline())


def test_a_new_connection_closed_before_the_answer_is_not_retried(scripted):
    server = scripted([CLOSE, answer("200 OK", b"{}")])
    with pytest.raises(ServerUnreachable, match="closed the connection without answering"):
        prove_remote(server.url, KEY, WTNS, "", Timeline())
    assert len(server.requests) == 1


# -- failures, as prove_remote reports them ----------------------------------------------------------
def test_a_refused_connection_is_unreachable_and_says_how_to_start_a_server():
    with socket.create_server(("127.0.0.1", 0)) as sock:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(ServerUnreachable, match=f"no zkpipe server answers at {url} .*zkpipe serve"):
        prove_remote(url, KEY, WTNS, "", Timeline())


def test_a_4xx_answer_is_refused_with_the_servers_message_and_a_5xx_is_a_failed_job(scripted):
    error = json.dumps({"error": {"code": "unauthorized", "message": "a bearer token is required"}}).encode()
    server = scripted([answer("401 Unauthorized", error), chunked("500 Internal Server Error", error)])
    with pytest.raises(ServerRefused, match=r"/v1/jobs: HTTP 401: 'a bearer token is required'"):
        prove_remote(server.url, KEY, WTNS, "", Timeline())
    with pytest.raises(RemoteJobFailed, match=r"/v1/jobs: HTTP 500: 'a bearer token is required'"):
        prove_remote(server.url, KEY, WTNS, "", Timeline())


def test_an_answer_that_is_not_a_zkpipe_servers_is_refused(scripted):
    server = scripted([b"SSH-2.0-OpenSSH_9.2\r\n", answer("200 OK", b"<html></html>"),
                       answer("200 OK", b"xyz\r\n", "Transfer-Encoding: chunked")])
    for expected in ("not an HTTP answer", "HTTP 200, not a zkpipe server's answer", "a chunk size"):
        with pytest.raises(ServerRefused, match=expected):
            prove_remote(server.url, KEY, WTNS, "", Timeline())


def test_a_server_that_does_not_answer_in_time_is_unreachable():
    with socket.create_server(("127.0.0.1", 0)) as silent:  # connections wait in its backlog, unanswered
        server = _Server(f"http://127.0.0.1:{silent.getsockname()[1]}", "", timeout_s=0.2)
        with pytest.raises(ServerUnreachable, match=r"\(timed out\)"):
            server.call("GET", "/v1/keys")


# -- URLs and https ---------------------------------------------------------------------------------
@pytest.mark.parametrize("url, parts", [
    ("127.0.0.1:9820", ("http", "127.0.0.1", 9820, "")),
    ("http://Example.COM", ("http", "example.com", 80, "")),
    ("https://proofs.example/zk/api/?x=1", ("https", "proofs.example", 443, "/zk/api")),
    ("http://user:pw@[::1]:9820/", ("http", "::1", 9820, "")),
])
def test_a_server_url_splits_into_scheme_host_port_and_prefix(url, parts):
    assert split_url(url) == parts


@pytest.mark.parametrize("url", ["ftp://host:21", "http://", "http://host:port", "http://host:70000",
                                 "http://[::1]x:1"])
def test_a_url_that_is_not_http_is_refused_before_any_connection(url):
    with pytest.raises(ServerRefused, match="expected http://HOST:PORT"):
        prove_remote(url, KEY, WTNS, "", Timeline())


HTTPS_PROBE = """
import socket, sys
from pipeline.oneshot.remote import ServerUnreachable, _Server
with socket.create_server(("127.0.0.1", 0)) as sock:   # takes the connection, never speaks TLS
    server = _Server(f"https://127.0.0.1:{sock.getsockname()[1]}", "", timeout_s=0.5)
    before = "ssl" in sys.modules
    try:
        server.call("GET", "/v1/keys")
    except ServerUnreachable as exc:
        print(before, "ssl" in sys.modules, server.url, str(exc).split(";")[0])
"""


def test_https_imports_ssl_only_when_it_connects():
    out = subprocess.run([sys.executable, "-c", HTTPS_PROBE], cwd=REPO, capture_output=True, text=True, timeout=60)
    before, after, url, message = out.stdout.split(" ", 3)
    assert (before, after) == ("False", "True"), out.stderr
    assert url.startswith("https://127.0.0.1:") and message.startswith(f"no zkpipe server answers at {url}")


def test_a_line_without_end_is_a_protocol_error(scripted):
    server = scripted([b"HTTP/1.1 200 OK\r\nX: " + b"y" * (70 * 1024)])
    with pytest.raises(ProtocolError, match="longer than"):
        connection(server).request("GET", "/", {})
