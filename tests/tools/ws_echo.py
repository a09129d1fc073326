#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A minimal WebSocket (RFC 6455) echo server and client, for the pass-through test.
   ws_echo.py serve HOST PORT      answers one connection per client, echoing each text frame
   ws_echo.py call HOST PORT TEXT  upgrades, sends TEXT, prints what comes back"""
import base64, hashlib, os, socket, struct, sys

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk: raise EOFError("closed during the handshake")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head.decode(), rest

def read_exact(conn, buffered, n):
    while len(buffered) < n:
        chunk = conn.recv(4096)
        if not chunk: raise EOFError("closed mid-frame")
        buffered += chunk
    return buffered[:n], buffered[n:]

def read_frame(conn, buffered):
    head, buffered = read_exact(conn, buffered, 2)
    length, masked = head[1] & 0x7f, head[1] & 0x80
    if length == 126:
        ext, buffered = read_exact(conn, buffered, 2); length = struct.unpack("!H", ext)[0]
    elif length == 127:
        ext, buffered = read_exact(conn, buffered, 8); length = struct.unpack("!Q", ext)[0]
    mask = b""
    if masked: mask, buffered = read_exact(conn, buffered, 4)
    payload, buffered = read_exact(conn, buffered, length)
    if masked: payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head[0] & 0x0f, payload, buffered

def frame(payload, mask):
    head = bytes([0x81])
    n = len(payload)
    bit = 0x80 if mask else 0
    head += bytes([bit | n]) if n < 126 else bytes([bit | 126]) + struct.pack("!H", n)
    if not mask: return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))

def serve(host, port):
    server = socket.create_server((host, port))
    while True:
        conn, _ = server.accept()
        try:
            head, rest = read_head(conn)
            key = [l.split(":", 1)[1].strip() for l in head.split("\r\n") if l.lower().startswith("sec-websocket-key:")][0]
            accept = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
            conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          "Sec-WebSocket-Accept: %s\r\n\r\n" % accept).encode())
            while True:
                opcode, payload, rest = read_frame(conn, rest)
                if opcode == 8: break
                conn.sendall(frame(b"echo: " + payload, False))
        except (EOFError, OSError, IndexError):
            pass
        conn.close()

def call(host, port, text):
    conn = socket.create_connection((host, port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    conn.sendall(("GET /chat HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (host, port, key)).encode())
    head, rest = read_head(conn)
    assert head.startswith("HTTP/1.1 101"), head
    for i in range(3):
        conn.sendall(frame(("%s %d" % (text, i)).encode() * (1 + 100 * i), True))
        _, payload, rest = read_frame(conn, rest)
        print(payload[:40].decode(), len(payload))
    conn.close()

if __name__ == "__main__":
    if sys.argv[1] == "serve": serve(sys.argv[2], int(sys.argv[3]))
    else: call(sys.argv[2], int(sys.argv[3]), sys.argv[4])
