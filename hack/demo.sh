#!/usr/bin/env bash
# The README's first command. Prepares the machine (hack/setup.sh), starts the local lab with 3 control-plane nodes
# on CRI-O 1.33 (as on OpenShift; from $PINNED_IMAGES_REFERENCE_DIR/cri-o) and 3 workers on containerd 1.7 and 2.1,
# writes an inventory and PinnedImageSets for it, and runs the pinned.images.prefetch playbook: control-plane nodes
# one at a time, workers in parallel, then the per-node table, whose "pinned" column is what each node's CRI reports.
#
#   bash hack/demo.sh          # start (or reuse) the lab and run the playbook; run it twice: nothing changes
#   bash hack/demo.sh down     # stop the lab and remove its directory
#
# The lab lives in .lab (or $PINNED_IMAGES_LAB_DIR); it needs root. See hack/README.md and docs/orchestration.md.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
python=.venv/bin/python

if [ "${1:-}" = "down" ]; then
  if [ -x "$python" ]; then
    exec "$python" hack/lab.py down
  fi
  echo "demo: no .venv, so no lab to stop"
  exit 0
fi
if [ $# -gt 0 ]; then
  echo "usage: bash hack/demo.sh [down]" >&2
  exit 2
fi

bash hack/setup.sh
export PATH="$top/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$top/.build/collections"
export ANSIBLE_CALLBACK_RESULT_FORMAT=yaml ANSIBLE_LOCALHOST_WARNING=False

reference=${PINNED_IMAGES_REFERENCE_DIR:-$top/../shared/reference}
if [ -f "$reference/cri-o/SHA256SUMS" ]; then
  export PINNED_IMAGES_REFERENCE_DIR=$reference
  control_plane=cri-o
else
  echo "demo: no CRI-O build in $reference/cri-o (set PINNED_IMAGES_REFERENCE_DIR); control-plane nodes run containerd 1.7"
  control_plane=containerd-1.7
fi
echo "== lab: 2 registries, 3 control-plane ($control_plane) + 3 worker (containerd 1.7, 2.1) nodes"
"$python" hack/lab.py up --nodes 6 --control-plane 3 --bulk 30 --bulk-size 256K \
  --runtime-node cp-0:$control_plane --runtime-node cp-1:$control_plane --runtime-node cp-2:$control_plane \
  --runtime-node worker-0:containerd-1.7 --runtime-node worker-1:containerd-2.1 \
  --runtime-node worker-2:containerd-2.1 >/dev/null
lab_dir=$("$python" -c 'import sys; sys.path.insert(0, "tests"); from support.lab import Lab; print(Lab().path)')
inventory=$("$python" hack/lab.py inventory)
nodes=$("$python" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["nodes"]))' "$lab_dir/state.json")
if [ "$nodes" != 6 ]; then
  echo "demo: the lab at $lab_dir was already running with $nodes nodes; 'bash hack/demo.sh down' starts afresh" >&2
fi
echo "   inventory: $inventory"

# One PinnedImageSet per pool, from the lab's images: the control plane gets 10 images, the workers 27.
"$python" - "$lab_dir" <<'EOF'
import json
import sys
from pathlib import Path

lab = Path(sys.argv[1])
state = json.loads((lab / "state.json").read_text())
images = {name: record["reference"] for name, record in state["images"].items()}
bulk = [record["reference"] for record in state["bulk"].get("bulk", [])]
pools = {
    "master": [images["plain-small"], images["auth-small"]] + bulk[:8],
    "worker": [images[n] for n in ("plain-shared-a", "plain-shared-b", "plain-multiarch", "auth-shared-a",
                                   "auth-multiarch")] + bulk[8:30],
}
documents = []
for pool, refs in pools.items():
    documents.append(json.dumps({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "PinnedImageSet",
        "metadata": {"name": f"{pool}-demo-images", "labels": {"machineconfiguration.openshift.io/role": pool}},
        "spec": {"pinnedImages": [{"name": ref} for ref in refs]},
    }, indent=2))
(lab / "demo-sets.yaml").write_text("---\n" + "\n---\n".join(documents) + "\n")
(lab / "demo-vars.yml").write_text(json.dumps({
    "cluster_sets": [str(lab / "demo-sets.yaml")],
    "cluster_report_file": str(lab / "demo-report.json"),
    "node_progress_interval": 2,
}, indent=2) + "\n")
EOF
echo "   sets:      $lab_dir/demo-sets.yaml"

echo "== ansible-playbook pinned.images.prefetch"
started=$("$python" -c 'import time; print(time.time())')
set +e
ansible-playbook -i "$inventory" pinned.images.prefetch -e @"$lab_dir/demo-vars.yml"
rc=$?
set -e

"$python" - "$lab_dir/demo-report.json" "$started" "$inventory" "$lab_dir/demo-vars.yml" <<'EOF'
import json
import os
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, "tests")
from support.node import RUNTIMES  # noqa: E402

sys.path.insert(0, os.environ["ANSIBLE_COLLECTIONS_PATH"])
from ansible_collections.pinned.images.plugins.plugin_utils._report_html import page_path  # noqa: E402

report = json.load(open(sys.argv[1]))
lab = json.loads((Path(sys.argv[1]).parent / "state.json").read_text())
wall = time.time() - float(sys.argv[2])
print("\n== per node (pinned: how many images the node's CRI reports pinned after the run)")
print(f"{'node':<10} {'runtime':<17} {'status':<8} {'pulled':>6} {'present':>7} {'failed':>6} {'MiB':>8} "
      f"{'seconds':>8}  pinned")
for node in report["nodes"]:
    runtime = RUNTIMES[lab["nodes"][node["host"]]["runtime"]]
    if node.get("pin_reason"):
        pinned = "not pinned (%s cannot pin)" % runtime.kind
    else:
        pinned = "-" if node["pinned"] is None else "%s (%s)" % (node["pinned"], node["pin_method"])
    print(f"{node['host']:<10} {runtime.kind + ' ' + runtime.version:<17} {node['status']:<8} {node['pulled']:>6} "
          f"{node['present']:>7} {node['failed']:>6} {node['bytes'] / 1048576:>8.1f} {node['seconds']:>8.1f}  {pinned}")
# The report's own sum (its table and page say the same): the prefetch's seconds on each node.
print(
    f"\nwall time {wall:.1f} s for {len(report['nodes'])} nodes; "
    f"the prefetch's seconds on the nodes add up to {report['summary']['node_seconds']:.1f} s"
)
# Only the files there are: a node on containerd pins with an image label and has no drop-in.
dropins = sorted(str(path) for path in Path(sys.argv[1]).parent.glob("nodes/*/crio.conf.d/50-pinned-images"))
if dropins:
    print("CRI-O drop-ins: " + " ".join(dropins))
print("report page (timeline, per node, failures; open it in a browser): " + page_path(sys.argv[1]))
command = [
    "ANSIBLE_COLLECTIONS_PATH=" + shlex.quote(os.environ["ANSIBLE_COLLECTIONS_PATH"]),
    shlex.quote(os.path.abspath(".venv/bin/ansible-playbook")),
    "-i",
    shlex.quote(sys.argv[3]),
    "pinned.images.prefetch",
    "-e",
    shlex.quote("@" + sys.argv[4]),
]
print("\nnext: the same run by hand against the lab (nothing changes; add -e to try variables, docs/orchestration.md):")
print("  " + " ".join(command))
print("'bash hack/demo.sh' again does the same; 'bash hack/demo.sh down' stops the lab")
EOF
exit "$rc"
