# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""support.websocket, the server side of RFC 6455 under the fake API server's pods/exec: the handshake key (the RFC's
own example, section 1.3), masked and fragmented frames in, pings answered, closes answered, protocol errors."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from support.websocket import (
    BINARY,
    CLOSE,
    CONTINUATION,
    MESSAGE_TOO_BIG,
    NO_STATUS_RECEIVED,
    PING,
    PONG,
    PROTOCOL_ERROR,
    TEXT,
    ServerWebSocket,
    accept_key,
    encode_frame,
)

MASK = b"\x37\xfa\x21\x3d"


@pytest.fixture
def pair():
    server, client = socket.socketpair()
    # A regression must fail the test, not hang it (there is no pytest-timeout).
    server.settimeout(10)
    client.settimeout(10)
    ws = ServerWebSocket(server.makefile("rb"), server.makefile("wb", buffering=0), max_message=1 << 20)
    yield ws, client
    server.close()
    client.close()


def send(sock, data):
    """Send from a thread: a frame bigger than the socket buffer blocks until the server side reads it."""
    thread = threading.Thread(target=sock.sendall, args=(data,), daemon=True)
    thread.start()
    return thread


def read_frame(sock):
    def exact(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            assert chunk, "connection closed"
            data += chunk
        return data

    first, second = exact(2)
    length = second & 0x7F
    assert not second & 0x80, "server frames are never masked"
    if length == 126:
        (length,) = struct.unpack("!H", exact(2))
    elif length == 127:
        (length,) = struct.unpack("!Q", exact(8))
    return first & 0x0F, exact(length)


def test_accept_key_is_the_rfc_example():
    # RFC 6455 section 1.3: key "dGhlIHNhbXBsZSBub25jZQ==" gives "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


@pytest.mark.parametrize("size", [0, 5, 125, 126, 65535, 65536, 300_001])
def test_masked_messages_of_every_length_encoding(pair, size):
    ws, client = pair
    payload = bytes(i % 251 for i in range(size))
    sender = send(client, encode_frame(BINARY, payload, mask=MASK))
    assert ws.receive() == (BINARY, payload)
    sender.join(5)


def test_fragments_are_joined_and_pings_answered_between_them(pair):
    ws, client = pair
    client.sendall(
        encode_frame(TEXT, b"hel", fin=False, mask=MASK)
        + encode_frame(PING, b"beat", mask=MASK)
        + encode_frame(CONTINUATION, b"lo", mask=MASK)
    )
    assert ws.receive() == (TEXT, b"hello")
    assert read_frame(client) == (PONG, b"beat")
    assert ws.pings == 1


def test_close_is_answered_and_ends_receiving(pair):
    ws, client = pair
    client.sendall(encode_frame(CLOSE, struct.pack("!H", 1000) + b"bye", mask=MASK))
    assert ws.receive() is None
    assert ws.close_received == (1000, "bye")
    assert read_frame(client) == (CLOSE, struct.pack("!H", 1000))
    assert ws.send(BINARY, b"late") is False


def test_outgoing_frames_are_unmasked_binary(pair):
    ws, client = pair
    assert ws.send(BINARY, b"\x01out")
    assert read_frame(client) == (BINARY, b"\x01out")


@pytest.mark.parametrize(
    "frame",
    [
        encode_frame(BINARY, b"not masked"),
        encode_frame(CONTINUATION, b"no start", mask=MASK),
        encode_frame(PING, b"x" * 126, mask=MASK),
        bytes([0x80 | 0x40 | BINARY, 0x80]) + MASK,  # RSV1 without an extension
        encode_frame(0x3, b"reserved opcode", mask=MASK),
    ],
    ids=["unmasked", "stray-continuation", "long-ping", "rsv1", "reserved-opcode"],
)
def test_protocol_errors_close_with_1002(pair, frame):
    ws, client = pair
    client.sendall(frame)
    assert ws.receive() is None
    opcode, data = read_frame(client)
    assert opcode == CLOSE and struct.unpack("!H", data[:2])[0] == PROTOCOL_ERROR


def test_a_peer_that_hangs_up_mid_frame_ends_receiving(pair):
    ws, client = pair
    client.sendall(encode_frame(BINARY, b"abcdef", mask=MASK)[:5])
    client.shutdown(socket.SHUT_WR)
    assert ws.receive() is None


def test_a_close_is_answered_with_the_code_it_carries(pair):
    ws, client = pair
    client.sendall(encode_frame(CLOSE, struct.pack("!H", 1001) + b"going", mask=MASK))
    assert ws.receive() is None
    assert ws.close_received == (1001, "going")
    assert read_frame(client) == (CLOSE, struct.pack("!H", 1001))


def test_a_close_without_a_code_is_recorded_as_1005_and_a_1_byte_one_is_an_error(pair):
    ws, client = pair
    client.sendall(encode_frame(CLOSE, b"", mask=MASK))
    assert ws.receive() is None
    assert ws.close_received == (NO_STATUS_RECEIVED, "")
    assert read_frame(client) == (CLOSE, b"")
    server, peer = socket.socketpair()
    server.settimeout(10)
    peer.settimeout(10)
    with server, peer:
        other = ServerWebSocket(server.makefile("rb"), server.makefile("wb", buffering=0))
        peer.sendall(encode_frame(CLOSE, b"\x03", mask=MASK))
        assert other.receive() is None
        opcode, data = read_frame(peer)
        assert opcode == CLOSE and struct.unpack("!H", data[:2])[0] == PROTOCOL_ERROR


@pytest.mark.parametrize("fragmented", [False, True], ids=["one-frame", "fragments"])
def test_a_message_over_the_limit_closes_with_1009(pair, fragmented):
    ws, client = pair
    big = b"x" * ((1 << 20) // 2 + 1)
    if fragmented:
        frames = encode_frame(BINARY, big, fin=False, mask=MASK) + encode_frame(CONTINUATION, big, mask=MASK)
    else:
        frames = encode_frame(BINARY, big + big, mask=MASK)

    def sendall():
        # The server stops reading at the limit: the rest of a single frame is never read.
        try:
            client.sendall(frames)
        except OSError:
            pass

    sender = threading.Thread(target=sendall, daemon=True)
    sender.start()
    assert ws.receive() is None
    opcode, data = read_frame(client)
    assert opcode == CLOSE and struct.unpack("!H", data[:2])[0] == MESSAGE_TOO_BIG
    client.shutdown(socket.SHUT_RDWR)
    sender.join(5)
    assert not sender.is_alive()
