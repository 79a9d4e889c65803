#!/usr/bin/env python
# SPDX-License-Identifier: GPL-3.0-or-later
"""A throw-away lab on this machine: a plain registry, a login+TLS registry and containerd or CRI-O "nodes".

Everything lives under one directory (default ``<repo>/.lab``, ``--dir`` or ``$PINNED_IMAGES_LAB_DIR``);
nothing is written to system paths. See hack/README.md. This is the command line; the lab itself is
``tests/support/lab.py`` (``Lab``), which tests use directly.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.errors import LabError  # noqa: E402
from support.images import KIB, parse_size  # noqa: E402
from support.lab import ENV_DIR, Lab  # noqa: E402
from support.node import DEFAULT_RUNTIME, RUNTIMES, TMPFS_SIZE  # noqa: E402

__all__ = ["Lab", "LabError", "main"]


def _print_human(status: Mapping[str, Any], out=sys.stdout) -> None:
    def alive(entry: Mapping[str, Any]) -> str:
        return "up (pid %s)" % entry["pid"] if entry.get("running") else "DOWN"

    print("lab %s: %s" % (status["dir"], "running" if status["running"] else "NOT running"), file=out)
    if status.get("up_seconds") is not None:
        print("  started in %.1fs, platform %s" % (status["up_seconds"], status["platform"]), file=out)
    print("registries:", file=out)
    for name, reg in status["registries"].items():
        print("  %-6s %-28s %s" % (name, reg["url"], alive(reg)), file=out)
    auth = status["registries"].get("auth")
    if auth:
        print("auth registry (user %s):" % auth["username"], file=out)
        for label, key in (
            ("CA", "ca"),
            ("credentials", "credentials"),
            ("docker config", "docker_config"),
            ("bad docker config", "bad_docker_config"),
        ):
            print("  %-18s %s" % (label, auth[key]), file=out)
    print("nodes:", file=out)
    for name, node in status["nodes"].items():
        extra = "  tmpfs %s" % node["tmpfs"] if node["tmpfs"] else ""
        runtime = RUNTIMES[node["runtime"]]
        extra += "  %s %s" % (runtime.kind, runtime.version)
        print("  %-10s %-13s %s  %s%s" % (name, node["role"], node["endpoint"], alive(node), extra), file=out)
    print("images:", file=out)
    for name, image in status["images"].items():
        print("  %-17s %s" % (name, image["reference"]), file=out)
        print("  %-17s %s" % ("", image["tag_reference"]), file=out)
    for prefix, records in status.get("bulk", {}).items():
        print("bulk %s: %d images, e.g. %s" % (prefix, len(records), records[0]["reference"]), file=out)


def _tmpfs_arg(text: str) -> tuple[str, str]:
    name, sep, size = text.partition(":")
    if not sep or not name or not TMPFS_SIZE.match(size):
        raise argparse.ArgumentTypeError("expected NAME:SIZE, e.g. worker-0:64M")
    return name, size


def _runtime_arg(text: str) -> tuple[str, str]:
    name, sep, choice = text.partition(":")
    if not sep or not name or choice not in RUNTIMES:
        raise argparse.ArgumentTypeError("expected NAME:%s, e.g. cp-0:cri-o" % "|".join(RUNTIMES))
    return name, choice


def _runtimes_help() -> str:
    return "; ".join("%s: %s %s (%s)" % (key, r.kind, r.version, r.source) for key, r in RUNTIMES.items())


def _size_arg(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def main(argv: Sequence[str] | None = None) -> int:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", help="lab directory (default: $%s or <repo>/.lab)" % ENV_DIR)
    parser = argparse.ArgumentParser(prog="lab.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", parents=[common], help="start the lab (a running lab is only printed)")
    up.add_argument("--nodes", type=int, default=2, help="containerd nodes (default 2)")
    up.add_argument("--control-plane", type=int, help="the first K nodes are cp-i, the rest worker-i (default 1)")
    up.add_argument(
        "--tmpfs-node",
        type=_tmpfs_arg,
        action="append",
        default=[],
        metavar="NAME:SIZE",
        help="put that node's containerd root on a tmpfs of SIZE (e.g. worker-0:64M); repeatable",
    )
    up.add_argument(
        "--runtime-node",
        type=_runtime_arg,
        action="append",
        default=[],
        metavar="NAME:RUNTIME",
        help="run that node with RUNTIME (default %s); repeatable. " % DEFAULT_RUNTIME + _runtimes_help(),
    )
    up.add_argument("--bulk", type=int, default=0, metavar="N", help="also push N small distinct images")
    up.add_argument("--bulk-size", type=_size_arg, default=64 * KIB, metavar="SIZE", help="bulk layer size (64K)")
    up.add_argument("--seed", type=int, default=0, help="seed of the image content (default 0)")
    up.add_argument("--json", action="store_true", help="print the state as JSON")
    down = commands.add_parser("down", parents=[common], help="stop everything and remove the directory")
    down.add_argument("--keep", action="store_true", help="keep the directory (logs, registry data)")
    status = commands.add_parser("status", parents=[common], help="print the lab; exit 1 unless it runs")
    status.add_argument("--json", action="store_true", help="print the state as JSON")
    add = commands.add_parser("add-node", parents=[common], help="start one more node on the running lab")
    add.add_argument("name", help="node name: cp-N is a control-plane node, anything else a worker")
    add.add_argument(
        "--runtime",
        choices=list(RUNTIMES),
        default=DEFAULT_RUNTIME,
        help="its runtime (default %s). " % DEFAULT_RUNTIME + _runtimes_help(),
    )
    add.add_argument("--tmpfs", metavar="SIZE", help="put its root on a tmpfs of SIZE (e.g. 64M)")
    for verb, what in (
        ("stop-node", "stop a node's runtime (SIGTERM; --kill: SIGKILL, as a crash)"),
        ("start-node", "start a stopped node's runtime on the same root"),
        ("restart-node", "stop a node's runtime and start it again (images, pins kept)"),
    ):
        node_command = commands.add_parser(verb, parents=[common], help=what)
        node_command.add_argument("name", help="node name")
        if verb == "stop-node":
            node_command.add_argument("--kill", action="store_true", help="SIGKILL at once")
    commands.add_parser("env", parents=[common], help='print shell exports: eval "$(hack/lab.py env)"')
    inventory = commands.add_parser("inventory", parents=[common], help="write an Ansible inventory of the nodes")
    inventory.add_argument("-o", "--output", help="file to write (default <lab>/inventory.yml; - for stdout)")
    inventory.add_argument("--python", help="ansible_python_interpreter of the nodes (default: this python)")
    args = parser.parse_args(argv)

    try:
        lab = Lab(args.dir, seed=getattr(args, "seed", None))
        if args.command == "up":
            if lab.running():
                print("lab.py: already running at %s; nothing started" % lab.path, file=sys.stderr)
            result = lab.up(
                args.nodes,
                args.control_plane,
                dict(args.tmpfs_node),
                args.bulk,
                args.bulk_size,
                runtimes=dict(args.runtime_node),
            )
        elif args.command in ("add-node", "stop-node", "start-node", "restart-node"):
            if args.command == "add-node":
                lab.add_node(args.name, args.tmpfs, args.runtime)
            elif args.command == "stop-node":
                lab.stop_node(args.name, kill=args.kill)
            elif args.command == "start-node":
                lab.start_node(args.name)
            else:
                lab.restart_node(args.name)
            result = lab.status()
            args.json = False
        elif args.command == "down":
            lab.down(keep=args.keep)
            return 0
        elif not lab.state:
            print("lab.py: no lab at %s" % lab.path, file=sys.stderr)
            return 1
        elif args.command == "env":
            for key, value in lab.env().items():
                print("export %s=%s" % (key, shlex.quote(value)))
            return 0
        elif args.command == "inventory":
            if args.output == "-":
                sys.stdout.write(lab.inventory_yaml(args.python))
            else:
                print(lab.write_inventory(args.output, args.python))
            return 0
        else:
            result = lab.status()
    except LabError as exc:
        print("lab.py: error: %s" % exc, file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        _print_human(result)
    return 0 if result["running"] else 1


if __name__ == "__main__":
    sys.exit(main())
