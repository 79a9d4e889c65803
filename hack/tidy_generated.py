"""Make protoc's Python output fit ansible-test's rules for module_utils, without ignore entries.

- pep8/pylint: the serialized descriptor becomes a parenthesized run of short bytes literals, `== False` becomes
  `is False` (black, run after this, fixes indentation).
- import sanity installs no collection requirements, so third-party imports must be guarded: the imports go into a
  try block and the rest of the module into its else block. _cri_client reports a missing grpcio/protobuf.

tests/unit/plugins/module_utils/_cri/test_cri_proto.py proves the descriptor is unchanged.
"""

import ast
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


def guard_imports(text):
    lines = text.splitlines()
    tree = ast.parse(text)
    imports = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
        elif imports:
            break
    first, last = imports[0].lineno - 1, imports[-1].end_lineno
    indent = ["    " + line if line.strip() else "" for line in lines[first:last]]
    body = ["    " + line if line.strip() else "" for line in lines[last:]]
    guarded = lines[:first] + ["try:"] + indent + ["except ImportError:", "    pass", "else:"] + body
    return "\n".join(guarded) + "\n"


for path in sys.argv[1:]:
    with open(path) as handle:
        text = handle.read()
    text = re.sub(r"AddSerializedFile\(b'((?:[^'\\]|\\.)*)'\)", split_bytes_literal, text)
    text = text.replace("_descriptor._USE_C_DESCRIPTORS == False", "_descriptor._USE_C_DESCRIPTORS is False")
    with open(path, "w") as handle:
        handle.write(guard_imports(text))
