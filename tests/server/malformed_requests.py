"""A corpus of malformed and hostile requests, as raw bytes, with the 4xx and error code each must get.

Three groups: what aiohttp's HTTP parser refuses before any handler runs (request line,
headers, framing, encodings), what its multipart and payload readers refuse inside a handler,
and what the service itself refuses (auth, JSON limits). Every answer must carry the API's
``{"error": {"code", "message"}}`` body. Issue 15 lists the first cases; the rest were added
while looking for more.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass

from tests.server.server_helpers import TOKEN

AUTH_LINE = f"Authorization: Bearer {TOKEN}\r\n".encode()
BOUNDARY = b"XyZ"
MULTIPART = b"multipart/form-data; boundary=" + BOUNDARY
JSON = b"application/json"
KEY_FIELD = (b'Content-Disposition: form-data; name="key_id"', b"mult_bn128")


@dataclass(frozen=True)
class Case:
    name: str
    request: bytes
    status: int
    code: str


def post_jobs(body: bytes, content_type: bytes, extra_headers: bytes = b"", length: int | None = None) -> bytes:
    length = len(body) if length is None else length
    return (b"POST /v1/jobs HTTP/1.1\r\nHost: zkpipe\r\n" + AUTH_LINE + b"Content-Type: " + content_type +
            b"\r\nContent-Length: " + str(length).encode() + b"\r\nConnection: close\r\n" + extra_headers +
            b"\r\n" + body)


def multipart(parts: list[tuple[bytes, bytes]], boundary: bytes = BOUNDARY) -> bytes:
    body = b"".join(b"--" + boundary + b"\r\n" + head + b"\r\n\r\n" + data + b"\r\n" for head, data in parts)
    return body + b"--" + boundary + b"--\r\n"


def get(path: bytes, headers: bytes = b"") -> bytes:
    return b"GET " + path + b" HTTP/1.1\r\nHost: zkpipe\r\n" + headers + b"Connection: close\r\n\r\n"


def _parser_cases() -> list[Case]:
    """Refused by aiohttp's request parser: answered by the listener's handler, not the app."""
    raw = {
        "bad_method": b"G@T / HTTP/1.1\r\nHost: x\r\n\r\n",
        "bad_version": b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
        "space_in_target": b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n",
        "bare_lf_line_ends": b"GET /healthz HTTP/1.1\nHost: x\n\n",
        "bad_absolute_url": b"GET http://[::1 HTTP/1.1\r\nHost: x\r\n\r\n",
        "request_line_too_long": b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        "header_without_colon": b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n",
        "space_before_colon": b"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n",
        "bad_char_in_header_name": b"GET /healthz HTTP/1.1\r\nHo(st: x\r\n\r\n",
        "header_line_too_long": b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 9000 + b"\r\n\r\n",
        "too_many_headers": b"GET /healthz HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(200)) + b"\r\n",
        "obsolete_line_folding": b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n",
        "nul_in_header_value": b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
        "bare_cr_in_header_value": b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n",
        "two_content_lengths": b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        "content_length_not_a_number": b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        "negative_content_length": b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
        "chunked_and_content_length": b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                      b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "unsupported_transfer_encoding": b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
        "bad_chunk_size": b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + AUTH_LINE +
                          b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        "tls_client_hello": bytes.fromhex("16030100a5010000a10303") + b"\x00" * 40 + b"\r\n\r\n",
        "deflate_body_not_deflate": post_jobs(b'{"key_id": "x"}', JSON, b"Content-Encoding: deflate\r\n"),
        "brotli_body_not_brotli": post_jobs(b'{"key_id": "x"}', JSON, b"Content-Encoding: br\r\n"),
    }
    return [Case(name, request, 400, "bad_request") for name, request in raw.items()]


def _body_cases() -> list[Case]:
    """Refused while a handler reads the body (aiohttp's payload and multipart readers, our checks)."""
    nested = multipart([KEY_FIELD, (b'Content-Disposition: form-data; name="w"\r\n'
                                    b"Content-Type: multipart/mixed; boundary=inner",
                                    b"--inner\r\nContent-Type: text/plain\r\n\r\nhi\r\n--inner--")])
    long_part_header = multipart([(KEY_FIELD[0] + b"\r\nX-Long: " + b"a" * 9000, KEY_FIELD[1])])
    nul_filename = multipart([(b'Content-Disposition: form-data; name="w"; filename="a\x00b.wtns"\r\n'
                               b"Content-Type: application/octet-stream", b"xx")])
    too_many_zeros = b'{"key_id":"chain_bn128","inputs":[{"x0":[' + b"0," * 3_000_000 + b'0]}]}'
    return [
        Case("multipart_part_is_multipart", post_jobs(nested, MULTIPART), 400, "nested_multipart"),
        Case("gzip_body_not_gzip", post_jobs(b'{"key_id": "x"}', JSON, b"Content-Encoding: gzip\r\n"), 400,
             "malformed_body"),
        Case("multipart_part_header_too_long", post_jobs(long_part_header, MULTIPART), 400, "malformed_multipart"),
        Case("nul_in_part_filename", post_jobs(nul_filename, MULTIPART), 400, "malformed_multipart"),
        Case("multipart_without_boundary", post_jobs(b"whatever", b"multipart/form-data"), 400, "malformed_multipart"),
        Case("multipart_other_boundary", post_jobs(multipart([KEY_FIELD], b"other"), MULTIPART), 400,
             "malformed_multipart"),
        Case("multipart_truncated", post_jobs(b'--XyZ\r\nContent-Disposition: form-data; name="key_id"\r\n\r\nmult',
                                              MULTIPART), 400, "malformed_multipart"),
        Case("multipart_boundary_too_long", post_jobs(b"x", b"multipart/form-data; boundary=" + b"b" * 100), 400,
             "malformed_multipart"),
        Case("multipart_part_without_name", post_jobs(multipart([(b"Content-Type: text/plain", b"m")]), MULTIPART),
             400, "unknown_field"),
        Case("multipart_field_too_long", post_jobs(multipart([(KEY_FIELD[0], b"k" * 5000)]), MULTIPART), 400,
             "field_too_long"),
        Case("json_nested_too_deep", post_jobs(b'{"key_id":"chain_bn128","inputs":[' + b"[" * 2000 + b"]" * 2000 + b"]}",
                                               JSON), 400, "malformed_json"),
        Case("json_not_utf8", post_jobs(b'{"key_id": "\xff\xfe"}', JSON), 400, "malformed_json"),
        Case("json_empty", post_jobs(b"", JSON), 400, "malformed_json"),
        Case("json_nan", post_jobs(b'{"key_id": NaN}', JSON), 400, "malformed_json"),
        # issue 15, finding 2: 131 million zeros in 250 MiB crashed the process; refused on its declared size
        Case("json_declared_250_mib", post_jobs(b'{"key_id":"chain_bn128","inputs":[{"x0":[0,0,0,', JSON,
                                                length=250 << 20), 413, "payload_too_large"),
        Case("json_gzip_bomb", post_jobs(gzip.compress(b"[" + b"0," * 5_000_000 + b"0]"), JSON,
                                         b"Content-Encoding: gzip\r\n"), 413, "payload_too_large"),
        Case("json_more_values_than_signals", post_jobs(too_many_zeros, JSON), 422, "too_many_input_values"),
        Case("unknown_expectation", post_jobs(b"{}", JSON, b"Expect: 200-ok\r\n"), 417, "expectation_failed"),
    ]


def _auth_cases() -> list[Case]:
    return [
        Case("authorization_not_utf8", get(b"/v1/keys", b"Authorization: Bearer \xff\xfe\xc3\r\n"), 401, "unauthorized"),
        Case("authorization_other_scheme", get(b"/v1/keys", b"Authorization: Basic " + TOKEN.encode() + b"\r\n"), 401,
             "unauthorized"),
        Case("authorization_scheme_only", get(b"/v1/keys", b"Authorization: Bearer\r\n"), 401, "unauthorized"),
        Case("http_0_9_request_line", b"GET /v1/keys\r\n\r\n", 401, "unauthorized"),
    ]


CORPUS = _parser_cases() + _body_cases() + _auth_cases()
