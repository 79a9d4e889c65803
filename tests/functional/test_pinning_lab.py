# SPDX-License-Identifier: GPL-3.0-or-later
"""pinned.images.crio_pinned_images against a real runtime: pin only what the node has (ImageStatus through CRI).

The lab runs containerd, whose CRI answers ImageStatus like CRI-O's; the drop-in itself is what CRI-O reads.
"""

from __future__ import annotations

from fixtures.ansible_runs import adhoc, node_socket, remove_all_images

EXPECTED = '[crio]\n  [crio.image]\n    pinned_images = ["{}"]\n'


def test_pins_only_present_images_and_reruns_unchanged(lab, tmp_path):
    socket = node_socket(lab, "worker-2")
    remove_all_images(socket)
    images = lab.images()
    present, missing = images["plain-small"].reference, images["plain-shared-a"].reference
    rc, _result, output = adhoc("pinned.images.prefetch", dict(images=[present], cri_socket=socket, min_free="64Mi"))
    assert rc == 0, output
    drop_in = tmp_path / "crio.conf.d" / "50-pinned-images"
    drop_in.parent.mkdir()
    args = dict(cri_socket=socket, dropin_path=str(drop_in), crio_reload="none")

    rc, result, output = adhoc("pinned.images.crio_pinned_images", dict(args, images=[present, missing]))
    assert rc != 0
    assert missing in result["msg"] and present not in result["msg"]
    assert not drop_in.exists()

    rc, result, output = adhoc("pinned.images.crio_pinned_images", dict(args, images=[present]), check=True)
    assert rc == 0, output
    assert result["changed"] is True
    assert not drop_in.exists()

    rc, result, output = adhoc("pinned.images.crio_pinned_images", dict(args, images=[present]))
    assert rc == 0, output
    assert result["changed"] is True
    assert drop_in.read_text() == EXPECTED.format(present)
    assert oct(drop_in.stat().st_mode & 0o777) == "0o644"

    rc, result, output = adhoc("pinned.images.crio_pinned_images", dict(args, images=[present]))
    assert rc == 0, output
    assert result["changed"] is False

    rc, result, output = adhoc("pinned.images.crio_pinned_images", dict(args, images=[present, missing], force=True))
    assert rc == 0, output
    assert drop_in.read_text() == EXPECTED.replace('"{}"', '"{}", "{}"').format(*sorted([present, missing]))
