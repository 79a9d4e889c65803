# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The server side of the WebSocket protocol (RFC 6455) over an accepted HTTP/1.1 connection, for the fake API
server's ``pods/exec``: the handshake answer, frames in (masked, as clients must send them; fragmented messages
joined; pings answered with pongs; a close answered with a close) and frames out (unmasked), no extensions."""

from __future__ import annotations

import base64
import hashlib
import struct
import threading

# RFC 6455 section 1.3: the GUID appended to Sec-WebSocket-Key.
_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
NORMAL_CLOSURE, PROTOCOL_ERROR, NO_STATUS_RECEIVED, MESSAGE_TOO_BIG = 1000, 1002, 1005, 1009


class WebSocketError(Exception):
    """The peer broke the protocol (the connection is closed with ``code``, 1002 unless said)."""

    def __init__(self, message, code=PROTOCOL_ERROR):
        super().__init__(message)
        self.code = code


def accept_key(key):
    """Sec-WebSocket-Accept for a client's Sec-WebSocket-Key."""
    return base64.b64encode(hashlib.sha1((key + _GUID).encode("ascii")).digest()).decode("ascii")  # noqa: S324


def encode_frame(opcode, payload, fin=True, mask=None):
    """One frame; ``mask`` (4 bytes) only to play a client in tests."""
    head = bytes([(0x80 if fin else 0) | opcode])
    length = len(payload)
    mask_bit = 0x80 if mask else 0
    if length < 126:
        head += bytes([mask_bit | length])
    elif length < 1 << 16:
        head += bytes([mask_bit | 126]) + struct.pack("!H", length)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", length)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        head += mask
    return head + payload


class ServerWebSocket:
    """A WebSocket on ``rfile`` (buffered reads) and ``wfile`` (writes) after the 101 answer was sent."""

    def __init__(self, rfile, wfile, max_message=64 << 20):
        self.rfile, self.wfile = rfile, wfile
        self.max_message = max_message
        self._write_lock = threading.Lock()
        self.close_sent = False
        self.close_received = None  # (code, reason) once the peer's close frame came
        self.pings = 0

    @staticmethod
    def handshake_headers(key, protocol):
        headers = [
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Accept", accept_key(key)),
        ]
        if protocol:
            headers.append(("Sec-WebSocket-Protocol", protocol))
        return headers

    def _read_exact(self, count):
        data = self.rfile.read(count)
        if len(data) != count:
            raise EOFError("the connection closed mid-frame")
        return data

    def _read_frame(self):
        first, second = self._read_exact(2)
        if first & 0x70:
            raise WebSocketError("reserved bits set without an extension")
        fin, opcode = bool(first & 0x80), first & 0x0F
        masked, length = bool(second & 0x80), second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", self._read_exact(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", self._read_exact(8))
        if not masked:
            raise WebSocketError("a client frame is not masked")
        if opcode >= 0x8 and (length > 125 or not fin):
            raise WebSocketError("a control frame is fragmented or longer than 125 bytes")
        if length > self.max_message:
            raise WebSocketError("message too big", MESSAGE_TOO_BIG)
        mask = self._read_exact(4)
        data = bytearray(self._read_exact(length))
        # XOR with the 4-byte mask, done on integers for speed (several MB of stdin go through here).
        if length:
            whole = int.from_bytes(mask * (length // 4 + 1), "little") & ((1 << (8 * length)) - 1)
            data = (int.from_bytes(data, "little") ^ whole).to_bytes(length, "little")
        return fin, opcode, bytes(data)

    def receive(self):
        """The next data message as (opcode, bytes), or None when the peer closed (or the connection ended)."""
        parts, message_opcode = [], None
        while True:
            try:
                fin, opcode, data = self._read_frame()
            except (EOFError, OSError, ValueError):
                return None
            except WebSocketError as error:
                self.close(error.code, str(error))
                return None
            if opcode == PING:
                self.pings += 1
                self.send(PONG, data)
                continue
            if opcode == PONG:
                continue
            if opcode == CLOSE:
                if len(data) == 1:
                    # RFC 6455 section 5.5.1: a close body starts with a 2-byte code.
                    self.close_received = (PROTOCOL_ERROR, "")
                    self.close(PROTOCOL_ERROR, "a 1-byte close body")
                    return None
                if not data:
                    # Section 7.1.5: no code in the close is recorded as 1005 (never sent); the answer has no code.
                    self.close_received = (NO_STATUS_RECEIVED, "")
                    self.send(CLOSE, b"")
                    return None
                code = struct.unpack("!H", data[:2])[0]
                self.close_received = (code, data[2:].decode("utf-8", "replace"))
                # Section 5.5.1: the answer echoes the code it received.
                self.close(code)
                return None
            if opcode == CONTINUATION:
                if message_opcode is None:
                    self.close(PROTOCOL_ERROR, "continuation without a message")
                    return None
            elif opcode in (TEXT, BINARY):
                if message_opcode is not None:
                    self.close(PROTOCOL_ERROR, "a new message inside a fragmented one")
                    return None
                message_opcode = opcode
            else:
                self.close(PROTOCOL_ERROR, "unknown opcode")
                return None
            parts.append(data)
            if sum(len(p) for p in parts) > self.max_message:
                self.close(MESSAGE_TOO_BIG, "message too big")
                return None
            if fin:
                return message_opcode, b"".join(parts)

    def send(self, opcode, payload):
        """Send one unfragmented frame; False when the connection is gone or closed."""
        with self._write_lock:
            if self.close_sent:
                return False
            if opcode == CLOSE:
                self.close_sent = True
            try:
                self.wfile.write(encode_frame(opcode, payload))
                self.wfile.flush()
            except (OSError, ValueError):
                self.close_sent = True
                return False
            return True

    def close(self, code=NORMAL_CLOSURE, reason=""):
        return self.send(CLOSE, struct.pack("!H", code) + reason.encode("utf-8"))
