"""Make protoc's Python output pass ansible-test's pep8 and pylint without ignore entries.

Only layout changes, plus one equivalent comparison: the serialized descriptor becomes a parenthesized run of short
bytes literals, `== False` becomes `is False`; black then fixes indentation. tests/unit/test_proto_wire_compat.py
proves the descriptor is unchanged.
"""

import re
import sys

CHUNK = 100


def split_bytes_literal(match):
    body = match.group(1)
    pieces, start = [], 0
    while start < len(body):
        end = min(start + CHUNK, len(body))
        # Never cut an escape sequence such as \x0f or \' in half.
        while body[end - 1] == "\\" or re.search(r"\\x[0-9a-fA-F]?$", body[start:end]):
            end -= 1
        pieces.append(body[start:end])
        start = end
    lines = "\n".join("    b'%s'" % piece for piece in pieces)
    return "AddSerializedFile(\n%s\n)" % lines


for path in sys.argv[1:]:
    with open(path) as handle:
        text = handle.read()
    text = re.sub(r"AddSerializedFile\(b'((?:[^'\\]|\\.)*)'\)", split_bytes_literal, text)
    text = text.replace("_descriptor._USE_C_DESCRIPTORS == False", "_descriptor._USE_C_DESCRIPTORS is False")
    with open(path, "w") as handle:
        handle.write(text)
