#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: prefetch
short_description: Pull container images onto a node through the CRI API
version_added: 0.1.0
description:
  - Pulls a list of images into the node's container runtime (CRI-O or containerd) through the CRI C(runtime.v1)
    gRPC API, the way the kubelet does, and reports what happened to each image.
  - Images already present are not pulled again. Images are de-duplicated first; the rest are pulled by a bounded
    pool of workers, with retries and exponential backoff.
  - Errors a retry cannot fix (credentials rejected, manifest unknown, invalid reference, no space left on device)
    are not retried. C(no space left on device) also stops the queue; the images not yet started are reported as
    V(skipped).
  - Registry credentials come from the node pull secret (a docker config JSON) and never appear in the output.
  - Before pulling, a disk guard estimates the space the missing images need from their registry manifests and
    refuses the prefetch when it would leave less than O(min_free) free; nothing is pulled then.
author:
  - pinned.images developers (@pinned-images)
extends_documentation_fragment:
  - pinned.images.cri
  - pinned.images.host_root
  - pinned.images.node_state
  - pinned.images.registry
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - Pulls nothing and writes no O(progress_file); images the node lacks are reported as V(would_pull) and make
        the task C(changed). The disk guard runs as in a real run, so a prefetch it would refuse fails.
  diff_mode:
    support: full
    details: The requested images on the node before and after (in check mode, after the pulls it would make).
  platform:
    platforms: posix
options:
  images:
    description:
      - Image references to have on the node, for example V(quay.io/org/app@sha256:<64 hex digits>).
      - Docker Hub short names are normalised (V(busybox) is V(docker.io/library/busybox)).
    type: list
    elements: str
    required: true
  require_digest:
    description:
      - Refuse references that are not pinned by a V(sha256) digest, as PinnedImageSet does.
    type: bool
    default: true
  concurrency:
    description:
      - Number of images pulled at the same time. Use V(1) on control-plane nodes.
    type: int
    default: 5
  pull_pause:
    description:
      - Seconds a worker waits between two images it pulls (not after its last one), to spare the node and the registry.
      - Its alias O(throttle) is its former name, which Ansible's C(throttle) task keyword (a cap on parallel hosts)
        made misleading.
    type: float
    aliases: [throttle]
    default: 0.0
  pace:
    description:
      - Pace the pulls by the write latency of O(pace_path)'s filesystem, to spare an etcd on the same disk. Before
        each pull (after O(pull_pause)), wait until the O(pace_percentile) of the latencies over the last
        O(pace_window) seconds and each of the last three samples are at most O(pace_bound_ms), for at most
        O(pace_max_wait) seconds.
      - A sample is the write etcd's WAL makes, 2 KiB appended to a temporary file in the probed directory and
        then C(fdatasync), every O(pace_interval) seconds while the pulls run. The file is removed at the end.
      - A pull itself cannot be slowed down through CRI, so the pace works between pulls. Not in check mode, and
        not when nothing is to be pulled.
      - The M(pinned.images.node) role turns it on for control-plane nodes.
    type: bool
    default: false
  pace_path:
    description:
      - The directory whose filesystem the pace watches, under O(host_root); by default etcd's data directory.
      - When it is not a directory (a node without etcd), the image store is watched instead (O(image_store_path),
        else the image filesystem the runtime reports).
    type: path
    default: /var/lib/etcd
  pace_bound_ms:
    description:
      - The write latency in milliseconds the pace keeps the disk under. etcd asks for a 99th percentile
        C(fdatasync) under 10 ms.
    type: float
    default: 10.0
  pace_percentile:
    description: The percentile of the samples over O(pace_window) that must be at most O(pace_bound_ms).
    type: float
    default: 99.0
  pace_window:
    description:
      - Seconds of samples the percentile is taken over, the previous pulls included, so that the pace keeps the
        percentile etcd sees, not only the calm moments between pulls.
    type: float
    default: 30.0
  pace_interval:
    description: Seconds between two samples of the probe.
    type: float
    default: 0.1
  pace_max_wait:
    description: The longest the pace waits before one image, in seconds; then O(pace_on_max_wait) decides.
    type: float
    default: 30.0
  pace_on_max_wait:
    description:
      - V(continue) pulls the image anyway (a warning names it); V(stop) pulls nothing more, reports the image and
        the rest V(skipped) and fails the task.
    type: str
    choices: [continue, stop]
    default: continue
  retries:
    description:
      - How many more times a failed pull is tried when a retry can help, so at most O(retries) + 1 attempts.
      - The machine-config-operator makes 5 attempts in all, as V(4) does here.
    type: int
    default: 5
  retry_delay:
    description:
      - Seconds before the first retry; the delay doubles after each failed attempt, up to O(retry_max_delay).
    type: float
    default: 1.0
  retry_max_delay:
    description:
      - Upper bound in seconds of the delay between two attempts.
    type: float
    default: 10.0
  pull_timeout:
    description:
      - Deadline in seconds for one pull attempt of one image. V(0) means no deadline.
    type: float
    default: 1800.0
  fail_on_error:
    description:
      - Fail the task when an image could not be pulled. With V(false) the task succeeds and each failure is in
        RV(images).
    type: bool
    default: true
  disk_guard:
    description:
      - How to keep the prefetch from filling the image filesystem. Checked before anything is pulled.
      - V(estimate) reads the manifest of every image the node lacks from the registry it would be pulled from,
        sums the compressed layers (each layer once across the whole set; a multi-arch index counts as the node
        platform's manifest), multiplies by O(expansion_factor), and refuses the prefetch unless free space minus
        O(min_free) covers it.
      - V(free_only) only requires O(min_free) to be free. V(off) checks nothing.
      - Images whose manifest cannot be read are reported as V(failed) and not pulled.
      - Where manifests are read follows the runtime's own configuration, CRI-O's O(registries_conf) or containerd's
        C(hosts.toml) files (O(containerd_config_path)); O(registry_mirrors) overrides both for the registries it
        names.
    type: str
    choices: [estimate, free_only, 'off']
    default: estimate
  min_free:
    description:
      - Space that must stay free on the image filesystem after the prefetch.
      - Bytes (V(1073741824)), binary or decimal units (V(16Gi), V(500Mi), V(1G)), or a percentage of the filesystem
        (V(10%)).
    type: str
    default: 16Gi
  expansion_factor:
    description:
      - Compressed layer bytes are multiplied by this to estimate their unpacked size.
    type: float
    default: 2.0
  containerd_config_path:
    description:
      - On containerd, the directory (or V(:)-separated directories, in order) of its registry hosts, each holding
        C(<registry>/hosts.toml), as the CRI plugin's C(config_path) names them. The disk guard reads manifests
        where those files send containerd's pulls (see C(docs/registries.md)).
      - By default it is found on the node without being told, from CRI C(Status) on containerd 1.6 and 1.7, from
        O(containerd_config) on containerd 2.x. CRI-O nodes read O(registries_conf) instead and ignore this option.
      - An empty string means no hosts directory, so every image is read from its own registry.
    type: str
  containerd_config:
    description:
      - containerd's config file, read for the CRI plugin's C(registry.config_path) (version 2 and version 3 files)
        when CRI C(Status) does not report it (containerd 2.x). Naming it makes it read on 1.6 and 1.7 too.
      - Default the file the running containerd was started with (its C(--config) or C(-c) flag, read from the
        process that serves the CRI socket in C(/proc), under O(host_root)), or containerd's default
        V(/etc/containerd/config.toml) when that process has no such flag. When no process can be read, the
        first that exists of the socket's layout defaults (k3s's
        V(/var/lib/rancher/k3s/agent/etc/containerd/config.toml) or RKE2's
        V(/var/lib/rancher/rke2/agent/etc/containerd/config.toml) for V(/run/k3s/containerd/containerd.sock),
        MicroK8s's V(/var/snap/microk8s/current/args/containerd.toml), else V(/etc/containerd/config.toml),
        Talos's V(/etc/cri/containerd.toml), Flatcar's V(/usr/share/containerd/config.toml)); with none,
        containerd's defaults (no hosts directory before 2.2, V(/etc/containerd/certs.d:/etc/docker/certs.d) from
        2.2). Its C(imports) are read too.
      - On containerd 2.1 and later, the file also says how containerd pulls (RV(disk_guard.pull_mode)).
    type: path
  image_store_path:
    description:
      - A path on the filesystem that holds the images, for reading its free space.
      - Defaults to the mountpoint that CRI C(ImageFsInfo) reports.
    type: path
  platform:
    description:
      - The platform whose manifest a multi-arch image is estimated by, as V(os/arch[/variant]).
      - Defaults to the platform of the node.
    type: str
  progress_file:
    description:
      - A JSON file the module rewrites after each image with counts, bytes and elapsed seconds, so a long run can
        be watched (the C(pinned.images.node) role polls it). Its directory must exist. A failed write (a full disk)
        stops the updates with a warning; it never stops the pulls.
      - CRI's PullImage says nothing until its image is complete, so while a pull runs the file is also rewritten
        every 2 seconds, with the images being pulled (C(current)) and, in C(image_fs_growth), how many bytes the
        image filesystem's use grew since the prefetch began (what the runtime wrote so far, and anything else that
        wrote there).
      - The file also holds O(run_id), so that a reader can tell this run's progress from an earlier one's.
    type: path
  lock_file:
    description:
      - A file the module locks (C(flock)) while it pulls, so that only one prefetch runs on the node at a time. A
        second run with the same lock file fails at once, naming the pid, run id and start time of the first, and
        pulls nothing; a run that was killed leaves no lock behind.
      - Default is C(prefetch.lock) in O(state_dir), which M(pinned.images.prune) and the C(pinned.images.node)
        role lock too. Not taken in check mode.
    type: path
  record_file:
    description:
      - The record of the images this collection pulled and pinned on the node, which M(pinned.images.prune) reads;
        only images it names are ever pruned. A JSON file, mode 0600, rewritten atomically after the pin (not in
        check mode); a record that cannot be read or written is a warning, and those images are then never pruned.
      - Default is C(pinned-images-record.json) in O(state_dir), where M(pinned.images.prune) reads it by default.
    type: path
  run_id:
    description:
      - A name for this run, written to O(progress_file) and O(lock_file) and shown to a second run that finds the
        lock taken. The C(pinned.images.node) role gives each run its own.
    type: str
  pin:
    description:
      - Pin the images once every one of them is on the node (present, or pulled by this run), in the same run.
        While any image is missing, failed or would be pulled (check mode), the pins are left as they are.
      - V(dropin) writes the CRI-O drop-in O(dropin_path) as M(pinned.images.crio_pinned_images) does, and makes
        CRI-O reload it (O(crio_reload)) when it changed; as that module does, it first fails when a drop-in CRI-O
        reads later sets C(pinned_images) without these images (naming it, in check mode too), and after the reload
        waits up to O(settle_timeout) until CRI reports the images pinned. V(label) sets the image label
        C(io.cri-containerd.pinned=pinned) as M(pinned.images.containerd_pinned_images) does (O(old_containerd),
        O(settle_timeout)). The pins hold exactly the requested images.
      - V(auto) picks by the runtime the CRI C(Version) call names, the drop-in on CRI-O, the label on containerd
        1.7.3 and later, and no pin on anything else (older containerd stores the label but does not honour it);
        on containerd older than 1.7.3 it warns with the reason and the fix, and RV(pin.reason) says why.
      - V(none) leaves pinning to the other modules.
      - On a node managed by OpenShift's machine-config-operator (O(mco_dir)), V(auto) prefetches but writes no
        drop-in (the machine-config-operator writes it from PinnedImageSets, or a MachineConfig delivers it;
        RV(pin.mco_managed) says so), and V(dropin) writes it with a warning.
      - RV(pin) reports the method and what changed; a failed pin fails the task, whatever O(fail_on_error) says.
    type: str
    choices: [none, auto, dropin, label]
    default: none
    version_added: 0.1.0
  mco_dir:
    description:
      - The machine-config-daemon's directory on the node. The node is managed by the machine-config-operator when
        its C(currentconfig) holds a MachineConfig (the daemon stores the config it applied there) or its
        C(node-annotations.json) or C(node-annotation.json.bak) holds the C(machineconfiguration.openshift.io/currentConfig)
        annotation (the Machine Config Server writes it at the node's first boot).
    type: path
    default: /etc/machine-config-daemon
    version_added: 0.1.0
  allow_empty:
    description:
      - With O(images=[]) and a O(pin) other than V(none), the pin would remove every pin of the node (the drop-in,
        or the labels this collection set). V(false) fails before the runtime is contacted, naming O(images);
        V(true) empties the pins.
    type: bool
    default: false
    version_added: 0.1.0
  dropin_path:
    description:
      - The CRI-O drop-in file for O(pin=dropin).
    type: path
    default: /etc/crio/crio.conf.d/50-pinned-images
    version_added: 0.1.0
  crio_reload:
    description:
      - How CRI-O is made to read a changed drop-in, once, in this run (not in check mode), as
        O(pinned.images.crio_pinned_images#module:crio_reload) does.
      - V(systemd) runs C(systemctl reload crio); V(signal) sends SIGHUP to the process whose id is in
        O(crio_pid_file); V(none) leaves it to you.
    type: str
    choices: [none, systemd, signal]
    default: systemd
    version_added: 0.1.0
  crio_pid_file:
    description:
      - File holding the CRI-O process id, for O(crio_reload=signal).
    type: path
    version_added: 0.1.0
  old_containerd:
    description:
      - What O(pin=label) does on containerd older than 1.7.3, which stores the label but does not honour it.
        V(fail) fails, V(warn) sets the labels anyway and warns. O(pin=auto) never picks the label there.
      - Its alias O(old_runtime) is its former name.
    type: str
    aliases: [old_runtime]
    choices: [fail, warn]
    default: fail
    version_added: 0.1.0
  settle_timeout:
    description:
      - Seconds to wait, after the label changed or CRI-O reloaded the drop-in, until CRI reports the images as
        pinned.
    type: float
    default: 10.0
    version_added: 0.1.0
notes:
  - Without O(pin), pinning is separate; see M(pinned.images.crio_pinned_images) and
    M(pinned.images.containerd_pinned_images).
seealso:
  - module: pinned.images.cri_image_info
  - module: pinned.images.crio_pinned_images
  - module: pinned.images.containerd_pinned_images
"""

EXAMPLES = r"""
- name: Prefetch an upgrade payload with the node pull secret
  become: true
  pinned.images.prefetch:
    images:
      - quay.io/openshift-release-dev/ocp-release@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
    auth_file: /var/lib/kubelet/config.json

- name: Prefetch one image at a time on a control-plane node, through containerd
  become: true
  pinned.images.prefetch:
    images: "{{ node_images }}"
    cri_socket: /run/containerd/containerd.sock
    concurrency: 1
    pull_pause: 1

- name: Prefetch on a control-plane node, each pull waiting while etcd's disk is slow
  become: true
  pinned.images.prefetch:
    images: "{{ node_images }}"
    concurrency: 1
    pace: true
    pace_path: /var/lib/etcd
    pace_bound_ms: 10
"""

RETURN = r"""
images:
  description: One entry per requested image, in the order given (after de-duplication).
  returned: always
  type: list
  elements: dict
  contains:
    image:
      description: The normalised image reference.
      type: str
      sample: quay.io/org/app@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
    status:
      description: V(present), V(pulled), V(failed), V(skipped) or V(would_pull).
      type: str
      sample: pulled
    image_id:
      description: The runtime's image ID, when known.
      type: str
      sample: sha256:3f57d9401f8d42f986df300f0c69192fc41da28ccc8d797829467780db3dd741
    size:
      description: Image size in bytes as the runtime reports it, when known.
      type: int
      sample: 4261574
    attempts:
      description: Pull attempts made.
      type: int
      sample: 1
    seconds:
      description: Seconds spent on this image.
      type: float
      sample: 2.314
    started:
      description: Epoch seconds when the pull of this image started (null for images that were not pulled).
      type: float
      sample: 1764448000.125
    finished:
      description: Epoch seconds when the pull of this image ended (null for images that were not pulled).
      type: float
      sample: 1764448002.439
    error:
      description: Why the image failed or was skipped.
      type: str
      sample: null
    error_kind:
      description: V(auth), V(not_found), V(no_space), V(invalid), V(permission), V(deadline), V(unavailable) or V(unknown).
      type: str
      sample: null
    waited:
      description: Seconds the pace held this image back before its pull (it ends at RV(images[].started)); V(0) without O(pace).
      type: float
      sample: 2.5
totals:
  description: Counts per status, bytes pulled and wall time.
  returned: always
  type: dict
  contains:
    requested:
      description: Images after de-duplication.
      type: int
    present:
      description: Images the node already had.
      type: int
    pulled:
      description: Images pulled by this run.
      type: int
    failed:
      description: Images that could not be pulled.
      type: int
    skipped:
      description: Images not attempted after the disk filled up, or after the pace stopped the queue (O(pace_on_max_wait=stop)).
      type: int
    would_pull:
      description: Images check mode would pull.
      type: int
    bytes_pulled:
      description: Sum of the sizes of the pulled images.
      type: int
    seconds:
      description: Wall time of the module's work (presence check, disk guard and pulls).
      type: float
  sample:
    requested: 3
    present: 1
    pulled: 2
    failed: 0
    skipped: 0
    would_pull: 0
    bytes_pulled: 52428800
    seconds: 4.2
pace:
  description: What the pace measured and how long it waited (O(pace)).
  returned: when O(pace) is on and the run pulled (not in check mode)
  type: dict
  contains:
    path:
      description: The directory probed (a host path).
      type: str
    source:
      description: V(path) (O(pace_path)) or V(image_store) (O(pace_path) is not a directory).
      type: str
    probe:
      description: V(fdatasync).
      type: str
    bound_ms:
      description: O(pace_bound_ms).
      type: float
    percentile:
      description: O(pace_percentile).
      type: float
    window:
      description: O(pace_window).
      type: float
    interval:
      description: O(pace_interval).
      type: float
    max_wait:
      description: O(pace_max_wait).
      type: float
    on_max_wait:
      description: O(pace_on_max_wait).
      type: str
    started:
      description: When the probe started (seconds since the epoch).
      type: float
    samples:
      description:
        - Each sample as V([seconds since RV(pace.started), latency in ms]), in order; the latest 10000.
      type: list
      elements: list
    samples_left_out:
      description: Earlier samples not listed in RV(pace.samples) (they count in RV(pace.latency_ms)).
      type: int
    latency_ms:
      description: The run's latencies in ms, every sample counted once (as etcd's own histogram counts each C(fdatasync)).
      type: dict
      contains:
        count:
          description: Samples taken.
          type: int
        p50:
          description: Median.
          type: float
        p90:
          description: 90th percentile.
          type: float
        p99:
          description: 99th percentile.
          type: float
        max:
          description: The slowest sample.
          type: float
    waited_seconds:
      description: Seconds the pace held pulls back in all (RV(images[].waited) added up).
      type: float
    held:
      description: Images whose pull found the latency over the bound and waited for it to fall.
      type: int
    timed_out:
      description: Images whose wait reached O(pace_max_wait).
      type: list
      elements: str
    error:
      description: Why the probe stopped, when it failed (the pulls after it were not paced).
      type: str
  sample:
    path: /var/lib/etcd
    source: path
    probe: fdatasync
    bound_ms: 10.0
    percentile: 99.0
    window: 30.0
    interval: 0.1
    max_wait: 30.0
    on_max_wait: continue
    started: 1764448000.125
    samples: [[0.002, 0.62], [0.103, 0.58], [0.204, 14.2]]
    samples_left_out: 0
    latency_ms: {count: 3, p50: 0.62, p90: 14.2, p99: 14.2, max: 14.2}
    waited_seconds: 2.5
    held: 1
    timed_out: []
    error: null
disk_guard:
  description: What the disk guard measured and decided (absent with O(disk_guard=off)).
  returned: when O(disk_guard) is not V(off)
  type: dict
  contains:
    mode:
      description: The O(disk_guard) mode.
      type: str
    ok:
      description: Whether the prefetch fits.
      type: bool
    filesystem:
      description: The path whose filesystem was measured.
      type: str
    required_bytes:
      description: Estimated bytes the missing images need once unpacked.
      type: int
    available_bytes:
      description: Free bytes on the image filesystem.
      type: int
    reserve_bytes:
      description: O(min_free) in bytes.
      type: int
    total_bytes:
      description: Size of the image filesystem.
      type: int
    headroom_bytes:
      description: Free bytes left above the reserve after the prefetch (negative when it does not fit).
      type: int
    images:
      description: Images whose size was estimated.
      type: int
    largest_images:
      description: The five largest estimated images, with C(image), C(required_bytes) and C(required).
      type: list
      elements: dict
    required:
      description: RV(disk_guard.required_bytes) in words, for example V(1.5 GiB).
      type: str
    available:
      description: RV(disk_guard.available_bytes) in words.
      type: str
    reserve:
      description: RV(disk_guard.reserve_bytes) in words.
      type: str
    message:
      description: The verdict in words, with required, available and reserve sizes.
      type: str
    registry_requests:
      description: HTTP requests made to registries for the estimate.
      type: int
    estimate_seconds:
      description: Seconds spent reading manifests.
      type: float
    sources:
      description:
        - Where each estimated image's manifest was read, by image. On containerd the host URL and the
          C(hosts.toml) that named it (or V(default) for the registry itself); on CRI-O the reference rewritten
          onto the mirror or registry.
      type: dict
    sources_from:
      description: The files the pull sources come from (registries.conf files, or containerd's C(config_path)
        and where it was found, as an option, CRI C(Status), the flag of the runtime's process or a default).
      type: str
    pull_mode:
      description:
        - containerd only. V(local), or V(transfer) on containerd 2.1 and later unless C(use_local_image_pull) or a
          setting the transfer service does not support (C(discard_unpacked_layers), C(registry.mirrors), ...) makes
          it pull locally. In V(transfer) mode a C(config_path) list is one directory name to containerd, which then
          pulls every image from its own registry; the guard reads the same, and warns.
      type: str
    pull_mode_reason:
      description: containerd only. Why containerd pulls in that mode.
      type: str
  sample:
    mode: estimate
    ok: false
    filesystem: /var/lib/containers/storage/overlay-images
    required_bytes: 21474836480
    available_bytes: 32212254720
    reserve_bytes: 17179869184
    total_bytes: 128849018880
    headroom_bytes: -6442450944
    images: 12
    largest_images:
      - image: quay.io/org/model@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
        required_bytes: 10737418240
        required: 10.0 GiB
    message: >-
      not enough disk space, 6.0 GiB short: 12 image(s) need 20.0 GiB (10.0 GiB compressed x2);
      30.0 GiB free of 120.0 GiB, reserve 16.0 GiB; largest: ...
    registry_requests: 14
    estimate_seconds: 0.8
    sources:
      quay.io/org/model@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9: >-
        https://mirror.example.internal:5000/v2 (/etc/containerd/certs.d/quay.io/hosts.toml)
    sources_from: containerd hosts.toml under config_path /etc/containerd/certs.d (from CRI Status)
    pull_mode: local
    pull_mode_reason: containerd 1.7.24 pulls locally (the transfer service pulls from 2.1 on)
pin:
  description:
    - The pinning step (O(pin)).
  returned: always
  type: dict
  version_added: 0.1.0
  contains:
    method:
      description: V(dropin), V(label) or V(none) (O(pin=auto) resolved for the runtime).
      type: str
    ran:
      description: Whether the pin step ran (false with V(none), or while some image is not on the node).
      type: bool
    changed:
      description: Whether the pins changed (or would, in check mode).
      type: bool
    images:
      description:
        - The pinned images (sorted); empty when the step did not run.
        - On a failed pin, those written before it failed (a drop-in CRI-O was not reloaded for, labels CRI did not
          report within O(settle_timeout)); then RV(pin.changed) is true.
      type: list
      elements: str
    path:
      description: The drop-in file (V(dropin)), else null.
      type: str
    reloaded:
      description: Whether CRI-O was told to reload (V(dropin)).
      type: bool
    records:
      description: The containerd image records labelled (C(pinned)) and unlabelled (C(unpinned)) (V(label)), else null.
      type: dict
    mco_managed:
      description:
        - With a drop-in pin, what shows that the machine-config-operator manages the node (O(mco_dir)), else null.
        - With O(pin=auto) the drop-in is then left to it (RV(pin.method) V(none)).
      type: str
    cri_pinned:
      description:
        - What CRI C(ImageStatus) reports after the pin step, per image (V(true) pinned, V(false) not, V(null) not on
          the node); for V(dropin) also the images the drop-in no longer lists. Empty when the step did not run.
      type: dict
    reason:
      description: Why O(pin=auto) pins nothing on this runtime (containerd older than 1.7.3), and the fix.
      type: str
      returned: when O(pin=auto) found a runtime that cannot pin
    error:
      description: Why the pin failed (then the task fails).
      type: str
      returned: on a failed pin
    started:
      description: When the pin step started (seconds since the epoch), also when it did not run.
      type: float
    finished:
      description: When the pin step ended (seconds since the epoch).
      type: float
  sample:
    method: dropin
    ran: true
    changed: true
    images:
      - quay.io/org/app@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
    path: /etc/crio/crio.conf.d/50-pinned-images
    reloaded: true
    records: null
    mco_managed: null
    cri_pinned:
      quay.io/org/app@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9: true
error_kind:
  description:
    - When the module fails before pulling because of the runtime (socket missing, permission, deadline), the kind of
      error, as in RV(images[].error_kind).
    - V(locked) when another prefetch holds O(lock_file).
  returned: on failure to reach the runtime or to take the lock
  type: str
  sample: unavailable
runtime:
  description: The container runtime that served the request.
  returned: always
  type: dict
  sample:
    runtime_name: containerd
    runtime_version: 1.7.24
    runtime_api_version: v1
    endpoint: /run/containerd/containerd.sock
"""

from typing import Any, Dict

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pinned.images.plugins.module_utils._openshift.mco_node import (
    DEFAULT_DIRECTORY as MCO_DIRECTORY,
)
from ansible_collections.pinned.images.plugins.module_utils._pins.crio_dropin import DEFAULT_PATH
from ansible_collections.pinned.images.plugins.module_utils._pins.method import METHOD_NONE, PIN_CHOICES
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pace import CONTINUE, ON_MAX_WAIT
from ansible_collections.pinned.images.plugins.module_utils._prefetch.pace import DEFAULT_PATH as PACE_PATH
from ansible_collections.pinned.images.plugins.module_utils._runs.options import (
    CRI_CLIENT_ARGUMENT_SPEC,
    HOST_ROOT_ARGUMENT_SPEC,
    NODE_STATE_ARGUMENT_SPEC,
    REGISTRY_ARGUMENT_SPEC,
)
from ansible_collections.pinned.images.plugins.module_utils._runs.outcome import end_module
from ansible_collections.pinned.images.plugins.module_utils._runs.prefetch import run


def argument_spec() -> Dict[str, Any]:
    """The module's options (also checked on the controller: plugin_utils/_variables.py)."""
    spec = dict(
        images=dict(type="list", elements="str", required=True),
        require_digest=dict(type="bool", default=True),
        concurrency=dict(type="int", default=5),
        pull_pause=dict(type="float", default=0.0, aliases=["throttle"]),
        pace=dict(type="bool", default=False),
        pace_path=dict(type="path", default=PACE_PATH),
        pace_bound_ms=dict(type="float", default=10.0),
        pace_percentile=dict(type="float", default=99.0),
        pace_window=dict(type="float", default=30.0),
        pace_interval=dict(type="float", default=0.1),
        pace_max_wait=dict(type="float", default=30.0),
        pace_on_max_wait=dict(type="str", choices=list(ON_MAX_WAIT), default=CONTINUE),
        retries=dict(type="int", default=5),
        retry_delay=dict(type="float", default=1.0),
        retry_max_delay=dict(type="float", default=10.0),
        pull_timeout=dict(type="float", default=1800.0),
        fail_on_error=dict(type="bool", default=True),
        disk_guard=dict(type="str", choices=["estimate", "free_only", "off"], default="estimate"),
        min_free=dict(type="str", default="16Gi"),
        expansion_factor=dict(type="float", default=2.0),
        image_store_path=dict(type="path"),
        platform=dict(type="str"),
        progress_file=dict(type="path"),
        lock_file=dict(type="path"),
        record_file=dict(type="path"),
        run_id=dict(type="str"),
        pin=dict(type="str", choices=list(PIN_CHOICES), default=METHOD_NONE),
        mco_dir=dict(type="path", default=MCO_DIRECTORY),
        allow_empty=dict(type="bool", default=False),
        dropin_path=dict(type="path", default=DEFAULT_PATH),
        crio_reload=dict(type="str", choices=["none", "systemd", "signal"], default="systemd"),
        crio_pid_file=dict(type="path"),
        old_containerd=dict(type="str", choices=["fail", "warn"], default="fail", aliases=["old_runtime"]),
        settle_timeout=dict(type="float", default=10.0),
        containerd_config_path=dict(type="str"),
        containerd_config=dict(type="path"),
    )
    spec.update(CRI_CLIENT_ARGUMENT_SPEC)
    spec.update(HOST_ROOT_ARGUMENT_SPEC)
    spec.update(NODE_STATE_ARGUMENT_SPEC)
    spec.update(REGISTRY_ARGUMENT_SPEC)
    return spec


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    end_module(module, run)


if __name__ == "__main__":
    main()
