#!/usr/bin/env python3
"""Raw HTTP/2 gRPC calls for scripts/attack.sh: what a hostile client sends, without a gRPC library.

A gRPC client checks its own metadata against the server's SETTINGS and refuses to send
more; an attacker does not. This speaks HTTP/2 by hand (RFC 9113 frames, RFC 7541 literal
headers without Huffman), so the shepherd gets exactly the bytes of the attack, and it reads
the answers (grpc-status of each stream, RST_STREAM, GOAWAY) with a small HPACK decoder
(static and dynamic table; a Huffman-coded string is reported as such, not decoded).

  attack_h2.py methods PORT COUNT LENGTH [--token T]      COUNT calls to made-up methods
  attack_h2.py metadata PORT BYTES CONNECTIONS [--token T] [--settled]
                                                           one call per connection with a
                                                           BYTES-long header, all at once;
                                                           --settled: after the SETTINGS
                                                           exchange, as gRPC clients do
  attack_h2.py call PORT PATH [--token T]                  one call with an empty message

Prints one line: what came back, e.g. "grpc-status 16 x5000" or "RST_STREAM 11 x8".
Loopback only (127.0.0.1); every socket has a 60 s timeout. Exit status 0 when every call
got an answer (a status, a reset or a GOAWAY), 1 otherwise.
"""
import collections
import socket
import struct
import sys
import threading

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, CONTINUATION = 0, 1, 3, 4, 6, 7, 9
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
MAX_FRAME = 16384  # the HTTP/2 default; frames never exceed it
STATIC = [("", "")] + [tuple((e + "|").split("|")[:2]) for e in (
    ":authority", ":method|GET", ":method|POST", ":path|/", ":path|/index.html", ":scheme|http",
    ":scheme|https", ":status|200", ":status|204", ":status|206", ":status|304", ":status|400",
    ":status|404", ":status|500", "accept-charset", "accept-encoding|gzip, deflate", "accept-language",
    "accept-ranges", "accept", "access-control-allow-origin", "age", "allow", "authorization",
    "cache-control", "content-disposition", "content-encoding", "content-language", "content-length",
    "content-location", "content-range", "content-type", "cookie", "date", "etag", "expect", "expires",
    "from", "host", "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since",
    "last-modified", "link", "location", "max-forwards", "proxy-authenticate", "proxy-authorization",
    "range", "referer", "refresh", "retry-after", "server", "set-cookie", "strict-transport-security",
    "transfer-encoding", "user-agent", "vary", "via", "www-authenticate")]


def encode_int(value, prefix_bits, first=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def literal(name, value):
    """A literal header field without indexing, new name, no Huffman."""
    name, value = name.encode(), value.encode() if isinstance(value, str) else value
    return b"\x00" + encode_int(len(name), 7) + name + encode_int(len(value), 7) + value


class Decoder:
    def __init__(self):
        self.table, self.size, self.max_size = [], 0, 4096

    def _int(self, data, pos, prefix_bits):
        limit = (1 << prefix_bits) - 1
        value = data[pos] & limit
        pos += 1
        if value < limit:
            return value, pos
        shift = 0
        while True:
            b = data[pos]
            pos += 1
            value += (b & 127) << shift
            shift += 7
            if b < 128:
                return value, pos

    def _str(self, data, pos):
        huffman = data[pos] & 0x80
        length, pos = self._int(data, pos, 7)
        raw = data[pos:pos + length]
        return ("<huffman>" if huffman else raw.decode("latin-1")), pos + length

    def _entry(self, index):
        if index < len(STATIC):
            return STATIC[index]
        return self.table[index - len(STATIC)]

    def _add(self, name, value):
        self.table.insert(0, (name, value))
        self.size += len(name) + len(value) + 32
        self._evict()

    def _evict(self):
        while self.size > self.max_size and self.table:
            name, value = self.table.pop()
            self.size -= len(name) + len(value) + 32

    def decode(self, data):
        headers, pos = [], 0
        while pos < len(data):
            b = data[pos]
            if b & 0x80:  # indexed
                index, pos = self._int(data, pos, 7)
                headers.append(self._entry(index))
            elif b & 0x40 or (b & 0xF0) in (0x00, 0x10):  # literal (incremental / without / never)
                incremental = bool(b & 0x40)
                index, pos = self._int(data, pos, 6 if incremental else 4)
                if index:
                    name = self._entry(index)[0]
                else:
                    name, pos = self._str(data, pos)
                value, pos = self._str(data, pos)
                headers.append((name, value))
                if incremental:
                    self._add(name, value)
            else:  # dynamic table size update
                self.max_size, pos = self._int(data, pos, 5)
                self._evict()
        return headers


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


class Connection:
    def __init__(self, port, settled=False):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
        self.buf = b""
        self.decoder = Decoder()
        self.block = {}  # stream -> header block being received
        if settled:
            self.settle()

    def settle(self):
        """As a gRPC client does: the server's SETTINGS acknowledged (its limits now apply)
        before the first call; a PING answered after our ACK shows the server has read it."""
        while True:
            head = self._read(9)
            length = struct.unpack(">I", b"\x00" + head[:3])[0]
            kind, flags = head[3], head[4]
            self._read(length)
            if kind == SETTINGS and not flags & ACK:
                self.sock.sendall(frame(SETTINGS, ACK, 0) + frame(PING, 0, 0, b"settled!"))
            elif kind == PING and flags & ACK:
                return

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send_call(self, stream, path, extra=()):
        block = b"".join([literal(":method", "POST"), literal(":scheme", "http"), literal(":path", path),
                          literal(":authority", "127.0.0.1"), literal("content-type", "application/grpc"),
                          literal("te", "trailers")] + [literal(k, v) for k, v in extra])
        pieces = [block[i:i + MAX_FRAME] for i in range(0, len(block), MAX_FRAME)] or [b""]
        out = []
        for i, piece in enumerate(pieces):
            flags = END_HEADERS if i == len(pieces) - 1 else 0
            out.append(frame(HEADERS if i == 0 else CONTINUATION, flags, stream, piece))
        out.append(frame(DATA, END_STREAM, stream, b"\x00\x00\x00\x00\x00"))  # one empty message
        self.sock.sendall(b"".join(out))

    def next_event(self):
        """Returns (stream, outcome) when a stream ends, ("conn", outcome) on GOAWAY, else None."""
        head = self._read(9)
        length = struct.unpack(">I", b"\x00" + head[:3])[0]
        kind, flags, stream = head[3], head[4], struct.unpack(">I", head[5:9])[0] & 0x7FFFFFFF
        payload = self._read(length)
        if kind == SETTINGS and not flags & ACK:
            self.sock.sendall(frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            self.sock.sendall(frame(PING, ACK, 0, payload))
        elif kind == GOAWAY:
            code = struct.unpack(">I", payload[4:8])[0]
            return "conn", "GOAWAY %d%s" % (code, (" '%s'" % payload[8:88].decode("latin-1")) if length > 8 else "")
        elif kind == RST_STREAM:
            return stream, "RST_STREAM %d" % struct.unpack(">I", payload[:4])[0]
        elif kind in (HEADERS, CONTINUATION):
            if kind == HEADERS:
                if flags & 0x8:  # padded
                    payload = payload[1:len(payload) - payload[0]]
                if flags & 0x20:  # priority
                    payload = payload[5:]
                self.block[stream] = [payload, bool(flags & END_STREAM)]
            else:
                self.block[stream][0] += payload
            if flags & END_HEADERS:
                block, ended = self.block.pop(stream)
                headers = dict(self.decoder.decode(block))
                if ended:
                    return stream, "grpc-status %s" % headers.get("grpc-status", "?")
        elif kind == DATA and flags & END_STREAM:
            return stream, "ended without trailers"
        return None


def run_calls(port, calls, window=50, outcomes=None, settled=False):
    """Sends calls ((path, extra headers) each) on one connection, at most `window` open."""
    outcomes = collections.Counter() if outcomes is None else outcomes
    try:
        conn = Connection(port, settled)
    except OSError as e:
        outcomes["connect failed: %s" % e.strerror] += len(calls)
        return outcomes
    pending, next_stream, i = set(), 1, 0
    try:
        while i < len(calls) or pending:
            while i < len(calls) and len(pending) < window:
                conn.send_call(next_stream, *calls[i])
                pending.add(next_stream)
                next_stream += 2
                i += 1
            event = conn.next_event()
            if event is None:
                continue
            stream, outcome = event
            if stream == "conn":
                outcomes[outcome] += len(pending) + len(calls) - i
                return outcomes
            if stream in pending:
                pending.discard(stream)
                outcomes[outcome] += 1
    except (OSError, ConnectionError) as e:
        outcomes["connection %s" % (getattr(e, "strerror", None) or e)] += len(pending) + len(calls) - i
    finally:
        conn.sock.close()
    return outcomes


def main(argv):
    token = None
    settled = "--settled" in argv
    if settled:
        argv.remove("--settled")
    if "--token" in argv:
        at = argv.index("--token")
        token = argv[at + 1]
        del argv[at:at + 2]
    auth = [("authorization", "Bearer " + token)] if token else []
    mode, port = argv[1], int(argv[2])
    outcomes = collections.Counter()
    if mode == "methods":
        count, length = int(argv[3]), int(argv[4])
        calls = [("/x%05d.Made/%s" % (n, ("m%05d" % n) * (length // 6 + 1))[:length], auth) for n in range(count)]
        run_calls(port, calls, outcomes=outcomes)
        total = count
    elif mode == "metadata":
        size, connections = int(argv[3]), int(argv[4])
        call = [("/pcp.v1.Admin/GetCluster", auth + [("x-attack", b"a" * size)])]
        lock = threading.Lock()

        def one():
            got = run_calls(port, call, settled=settled)
            with lock:
                outcomes.update(got)

        threads = [threading.Thread(target=one) for _ in range(connections)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        total = connections
    elif mode == "call":
        run_calls(port, [(argv[3], auth)], outcomes=outcomes)
        total = 1
    else:
        print("attack_h2.py: unknown mode %r" % mode, file=sys.stderr)
        return 2
    print(", ".join("%s x%d" % (k, v) for k, v in sorted(outcomes.items())))
    answered = sum(v for k, v in outcomes.items() if not k.startswith(("connect", "connection")))
    return 0 if answered == total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
