#!/usr/bin/env python3
"""Writes the seed corpora in Tests/Fuzz/corpus/<target>/ (valid and a few near-valid inputs).

Run from anywhere: python3 Fuzz/make_corpus.py. Regenerates only the named seed files; other
files in those folders (such as saved crash inputs, crash-*) are left alone.
"""
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Fuzz", "corpus")


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# --- WebSocket (RFC 6455 §5.2) ---------------------------------------------------------------

KEY = bytes([0x37, 0xFA, 0x21, 0x3D])


def frame(opcode, payload=b"", fin=True, mask=None, rsv=0, form=None):
    b0 = (0x80 if fin else 0) | (rsv << 4) | opcode
    m = 0x80 if mask else 0
    n = len(payload)
    form = form or (0 if n < 126 else 2 if n <= 0xFFFF else 8)
    if form == 0:
        head = bytes([b0, m | n])
    elif form == 2:
        head = bytes([b0, m | 126]) + struct.pack(">H", n)
    else:
        head = bytes([b0, m | 127]) + struct.pack(">Q", n)
    if mask:
        return head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
    return head + payload


def ws_both(name, frames):
    """The same frames unmasked (client role) and masked (server role)."""
    write("websocket", name + "-unmasked", b"".join(frame(*f[:2], **f[2]) for f in frames))
    write("websocket", name + "-masked", b"".join(frame(*f[:2], mask=KEY, **f[2]) for f in frames))


ws_both("text", [(1, b"Hello", {})])
ws_both("binary", [(2, bytes(range(40)), {})])
ws_both("text-utf8", [(1, "héllo wörld €𝄞".encode(), {})])
ws_both("fragmented", [(1, b"Hel", {"fin": False}), (0, b"lo", {"fin": False}), (0, b" world", {})])
ws_both("fragmented-utf8-split", [(1, "€".encode()[:1], {"fin": False}), (0, "€".encode()[1:] + b"!", {})])
ws_both("fragmented-with-ping", [(2, b"ab", {"fin": False}), (9, b"ping", {}), (0, b"cd", {})])
ws_both("ping-pong", [(9, b"are you there", {}), (10, b"", {})])
ws_both("close-1000", [(8, struct.pack(">H", 1000) + b"bye", {})])
ws_both("close-empty", [(8, b"", {})])
ws_both("len16", [(2, bytes(i & 0xFF for i in range(300)), {})])
ws_both("len64", [(1, b"x" * 20, {"form": 8})])
ws_both("several", [(1, b"one", {}), (2, b"\x00\x01", {}), (9, b"", {}), (1, b"two", {}), (8, struct.pack(">H", 4000), {})])
ws_both("rsv-set", [(1, b"hi", {"rsv": 4})])
ws_both("reserved-opcode", [(3, b"hi", {})])
ws_both("close-bad-code", [(8, struct.pack(">H", 1005), {})])
ws_both("invalid-utf8", [(1, b"\xc3\x28", {})])
write("websocket", "len64-top-bit", bytes([0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 1]))
write("websocket", "truncated", frame(1, b"Hello world")[:7])

# --- WebSocket sessions: a control byte (see Fuzz/FuzzWebSocketSession.swift), then the peer's bytes.
ACCEPT_101 = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")


def ws_session(name, control, frames, masked):
    write("websocket-session", name, bytes([control]) + b"".join(frame(*f[:2], mask=KEY if masked else None, **f[2]) for f in frames))


for masked in (False, True):
    side = "-masked" if masked else ""
    ws_session("messages" + side, 0x00, [(1, b"Hello", {}), (2, bytes(range(10)), {}), (9, b"p", {}), (10, b"", {})], masked)
    ws_session("fragmented" + side, 0x10, [(1, b"Hel", {"fin": False}), (9, b"", {}), (0, b"lo", {})], masked)
    ws_session("peer-close-1012" + side, 0x00, [(1, b"x", {}), (8, struct.pack(">H", 1012) + b"service restart", {})], masked)
    ws_session("we-close-first" + side, 0x02 | 0x0C, [(1, b"late", {}), (10, b"", {}), (8, struct.pack(">H", 1000), {})], masked)
    ws_session("close-unanswered" + side, 0x02 | 0x0C, [(1, b"late", {})], masked)
    ws_session("too-big" + side, 0x10, [(2, bytes(300), {})], masked)
    ws_session("bad-utf8" + side, 0x04, [(1, b"\xc3\x28", {})], masked)
write("websocket-session", "upgrade-raw-accepted", b"\x01" + ACCEPT_101 + frame(1, b"hi"))
write("websocket-session", "upgrade-raw-rejected", b"\x01HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\r\n")
write("websocket-session", "upgrade-raw-partial", b"\x0d" + ACCEPT_101[:40])

# --- SignalR JSON hub protocol ------------------------------------------------------------------

RS = "\x1e"
json_records = {
    "handshake-ok": "{}",
    "handshake-error": '{"error":"Requested protocol \\u0027foo\\u0027 is not available."}',
    "handshake-request": '{"protocol":"json","version":1}',
    "invocation": '{"type":1,"target":"Send","arguments":["alice","hello \\"world\\" \\u00e9\\ud83d\\ude00",42,1.5e3,true,null,{"a":[1,2]}]}',
    "invocation-blocking": '{"type":1,"invocationId":"123","target":"Echo","arguments":[],"headers":{"k":"v"}}',
    "invocation-streamids": '{"type":1,"target":"Upload","arguments":[1],"streamIds":["1","2"]}',
    "stream-item": '{"type":2,"invocationId":"7","item":{"n":-0.5}}',
    "completion-result": '{"type":3,"invocationId":"8","result":[1,"two"]}',
    "completion-error": '{"type":3,"invocationId":"8","error":"It broke\\n"}',
    "completion-void": '{"type":3,"invocationId":"9"}',
    "stream-invocation": '{"type":4,"invocationId":"10","target":"Counter","arguments":[10,500]}',
    "cancel-invocation": '{"type":5,"invocationId":"10"}',
    "ping": '{"type":6}',
    "close": '{"type":7,"error":"Connection closed with an error.","allowReconnect":true}',
    "ack": '{"type":8,"sequenceId":1394}',
    "sequence": '{"type":9,"sequenceId":1}',
    "unknown-type": '{"type":99,"x":[{}]}',
    "whitespace": ' \t\r\n{ "type" : 1 , "target" : "A" , "arguments" : [ ] } ',
}
for name, rec in json_records.items():
    write("json-hub", name, rec + RS)
write("json-hub", "batch", RS.join(json_records[k] for k in ["ping", "invocation", "stream-item", "completion-void", "ack"]) + RS)
write("json-hub", "partial", json_records["invocation"][:30])
write("json-hub", "deep", '{"type":1,"target":"D","arguments":[' + "[" * 60 + "]" * 60 + "]}" + RS)
write("json-hub", "not-object", "[1,2]" + RS)

# --- SignalR MessagePack hub protocol -----------------------------------------------------------


def mp(v):
    """A minimal MessagePack encoder for the seeds."""
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, Raw):
        return v.b
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        if 0 <= v < 256:
            return b"\xcc" + bytes([v])
        if 0 <= v < 65536:
            return b"\xcd" + struct.pack(">H", v)
        if 0 <= v < 2**32:
            return b"\xce" + struct.pack(">I", v)
        if v >= 0:
            return b"\xcf" + struct.pack(">Q", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        if len(b) < 32:
            return bytes([0xA0 | len(b)]) + b
        if len(b) < 256:
            return b"\xd9" + bytes([len(b)]) + b
        return b"\xda" + struct.pack(">H", len(b)) + b
    if isinstance(v, bytes):
        return b"\xc4" + bytes([len(v)]) + v
    if isinstance(v, list):
        head = bytes([0x90 | len(v)]) if len(v) < 16 else b"\xdc" + struct.pack(">H", len(v))
        return head + b"".join(mp(x) for x in v)
    if isinstance(v, dict):
        head = bytes([0x80 | len(v)])
        return head + b"".join(mp(k) + mp(x) for k, x in v.items())
    raise TypeError(v)


class Raw:
    def __init__(self, b):
        self.b = b


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def msg(v):
    body = mp(v)
    return varint(len(body)) + body


mp_messages = {
    "invocation": [1, {}, None, "Send", ["alice", "hello", 42, -7, 1.5, True, None, b"\x00\x01"]],
    "invocation-blocking": [1, {"k": "v"}, "123", "Echo", []],
    "invocation-streamids": [1, {}, None, "Upload", [1], ["1", "2"]],
    "invocation-aiosignalr-headers": [1, 128, None, "Send", ["x"]],
    "stream-item": [2, {}, "7", {"n": [1, 2, 3]}],
    "completion-error": [3, {}, "8", 1, "It broke"],
    "completion-void": [3, {}, "8", 2],
    "completion-result": [3, {}, "8", 3, [1, "two", 2**40]],
    "stream-invocation": [4, {}, "10", "Counter", [10, 500], []],
    "cancel-invocation": [5, {}, "10"],
    "ping": [6],
    "close": [7, "Connection closed with an error.", True],
    "close-nil": [7, None],
    "ack": [8, 1394],
    "sequence": [9, 1],
    "unknown-type": [99, "x"],
    "long-body": [1, {}, None, "Send", ["x" * 300]],
    "ext-and-float32": [1, {}, None, "T", [Raw(b"\xd4\x01\x02"), Raw(b"\xca\x3f\x80\x00\x00"), Raw(b"\xc7\x02\x05ab")]],
}
for name, v in mp_messages.items():
    write("msgpack-hub", name, msg(v))
write("msgpack-hub", "batch", b"".join(msg(mp_messages[k]) for k in ["ping", "invocation", "stream-item", "completion-void", "ack"]))
write("msgpack-hub", "prefix-non-minimal", b"\x82\x80\x80\x00" + mp([6]))
write("msgpack-hub", "prefix-5-bytes", b"\x82\x80\x80\x80\x00" + mp([6]))
write("msgpack-hub", "prefix-invalid", b"\xff\xff\xff\xff\x0f")
write("msgpack-hub", "truncated", msg(mp_messages["invocation"])[:12])

# --- Server-Sent Events -------------------------------------------------------------------------

sse = {
    "aspnet": ":\r\n\r\ndata: {\"n\":1}\r\n\r\ndata: {\"n\":2}\r\n\r\n",
    "multiline": "data: line one\ndata: line two\ndata\n\n",
    "fields": "event: tick\nid: 42\nretry: 1500\ndata: hello\n\nid\ndata: after empty id\n\n",
    "cr-only": "data: a\rdata: b\r\rdata: c\r\r",
    "crlf-split": "data: x\r\n\r\ndata: y\r",
    "bom": "\ufeffdata: bom\n\n",
    "comments": ": keep-alive\n\n: another\ndata:no space\n\n",
    "no-data": "event: nothing\n\nretry: abc\n\n",
    "unknown-fields": "foo: bar\ndata:  two spaces\nid: a\x00b\n\n",
    "unterminated": "data: never dispatched",
    "long-line": "data: " + "x" * 100 + "\n\n",
}
for name, s in sse.items():
    write("sse", name, s)

# --- HTTP responses -----------------------------------------------------------------------------

http = {
    "content-length": "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"ok\":true}\r\n",
    "chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n",
    "chunked-trailers": "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\nA\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n",
    "not-modified": "HTTP/1.1 304 Not Modified\r\nETag: \"abc\"\r\nContent-Length: 99\r\n\r\n",
    "no-content": "HTTP/1.1 204 No Content\r\n\r\n",
    "continue": "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "early-hints": "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
    "switching": "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n\x81\x02hi",
    "pipelined": "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\noneHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n",
    "http10-until-close": "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nread until the connection closes",
    "keep-alive-10": "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
    "connection-close": "HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 5\r\n\r\noops!",
    "sse-chunked": "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n:\r\n\r\n\r\n14\r\ndata: {\"n\":1}\r\n\r\n\r\n",
    "bare-lf": "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi",
    "duplicate-length": "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3, 3\r\n\r\nabc",
    "conflicting-length": "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
    "te-and-length": "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
    "obs-fold": "HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 0\r\n\r\n",
    "truncated-body": "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
    "truncated-head": "HTTP/1.1 200 OK\r\nContent-Le",
}
for name, s in http.items():
    write("http-response", name, s)

# --- HTTP requests (the reference server) -------------------------------------------------------

requests = {
    "get": "GET /api/items?id=1 HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n",
    "post-length": "POST /chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":\"bc\"}",
    "post-chunked": "PUT /upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n2;x=y\r\nef\r\n0\r\nTrailer: 1\r\n\r\n",
    "expect-continue": "POST /big HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
    "pipelined": "GET /a HTTP/1.1\r\n\r\nHEAD /b HTTP/1.1\r\nConnection: close\r\n\r\nDELETE /c HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    "http10": "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    "leading-crlf": "\r\n\r\nOPTIONS * HTTP/1.1\r\n\r\n",
    "negotiate": "POST /hub/negotiate?negotiateVersion=1 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    "upgrade": "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    "te-and-length": "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "te-not-chunked": "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
    "custom-method": "PATCH /x HTTP/1.1\r\nContent-Length: 1\r\n\r\nzBREW /pot HTTP/1.1\r\n\r\n",
    "truncated-chunk": "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nff\r\nabc",
}
for name, s in requests.items():
    write("http-request", name, s)

# --- HTTP client exchange (keep-alive sequences, head facts, event streams) ---------------------

exchanges = {
    "keep-alive-sequence": "HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Length: 5\r\n\r\nhello"
                           "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n"
                           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                           "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nz",
    "rate-limited": "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1.5\r\nX-RateLimit-Remaining: 0\r\nContent-Length: 0\r\n\r\n"
                    "HTTP/1.1 503 Service Unavailable\r\nRetry-After: Fri, 31 Dec 1999 23:59:59 GMT\r\nContent-Length: 2\r\n\r\n{}",
    "redirect": "HTTP/1.1 302 Found\r\nLocation: /next\r\nX-W: 12.5\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "event-stream": "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "5\r\n:\r\n\r\n\r\n9\r\ndata: spl\r\n8\r\nit\r\n\r\nda\r\n11\r\nta: a\ndata: b\n\nid\r\n4\r\n: 7\n\r\n",
    "until-close": "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"negotiateVersion\":1}",
    "interim-then-final": "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    "truncated": "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf",
    "bad-chunk": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
}
for name, s in exchanges.items():
    write("http-exchange", name, s)

# --- Hub protocol session (first byte: bit 0 MessagePack, bit 1 stateful, bit 2 small message
# limit, bit 3 small replay cap; the rest is what the server sends) ---------------------------

def rec(*texts):
    return b"".join(t.encode() + b"\x1e" for t in texts)

J_OK = b"{}\x1e"
J_CMP = '{"type":3,"invocationId":"1"}'
hub_session = {
    "json-basic": b"\x00" + J_OK + rec('{"type":1,"invocationId":"0","target":"Send","arguments":["hi",42]}', J_CMP,
                                        '{"type":2,"invocationId":"1","item":null}', '{"type":6}',
                                        '{"type":7,"error":"bye","allowReconnect":true}'),
    "json-stateful-resume": b"\x02" + J_OK + rec(J_CMP, J_CMP, '{"type":5,"invocationId":"1"}', J_CMP,
                                                  '{"type":4,"invocationId":"2","target":"S","arguments":[]}',
                                                  '{"type":9,"sequenceId":1}', J_CMP, J_CMP, J_CMP, J_CMP,
                                                  '{"type":8,"sequenceId":2}', '{"type":7}'),
    "json-handshake-error": b"\x00" + rec('{"error":"Requested protocol is not available."}'),
    "json-handshake-message": b"\x04" + rec('{"type":6}'),
    "json-small-cap": b"\x0a" + J_OK + rec(*([J_CMP] * 12)),
    "msgpack-basic": b"\x01" + J_OK + bytes.fromhex("1196018 0A3 78797AA66D6574686F64912A90".replace(" ", ""))
                     + bytes.fromhex("0894038 0A378797A02".replace(" ", "")) + bytes.fromhex("029106")
                     + bytes.fromhex("07930 7A378797AC3".replace(" ", "")),
    "msgpack-stateful-resume": b"\x03" + J_OK + bytes.fromhex(
        "0894038 0A378797A02" "0894038 0A378797A02" "0793058 0A378797A" "0894038 0A378797A02"
        "10950480A378797AA66D6574686F64912A" "03920901" "0894038 0A378797A02" "0894038 0A378797A02"
        "0894038 0A378797A02" "03920802" "039207C0".replace(" ", "").replace(" ", "")),
}
for name, data in hub_session.items():
    write("hub-session", name, data)
