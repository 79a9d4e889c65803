#!/usr/bin/python
# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: prefetch_job
short_description: Follow a pinned.images.prefetch started in the background, and return its result
version_added: 0.1.0
description:
  - Waits for a P(pinned.images.prefetch#module) job started with C(async) and C(poll=0), and returns that job's
    result once it ends, within about O(poll) seconds of its end.
  - Every O(interval) seconds it reads the job's O(progress_file) and prints a line (images done of total, GiB,
    seconds elapsed; while pulls run, how many and how much the image filesystem grew) whenever the progress
    changed.
  - Removes the job's result file from the node once it has read it.
  - This module is implemented by an action plugin on the controller; it reads the job's result file (as
    C(ansible.builtin.async_status) does) and the progress file with one C(cat) command each over the connection,
    so a check costs a round trip, not a module run on the node.
author:
  - pinned.images developers (@pinned-images)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: none
    details: A job only exists outside check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  jid:
    description: The job id, RV(ansible.builtin.async_status#module:ansible_job_id) of the task that started the job.
    type: str
    required: true
  results_file:
    description:
      - The job's result file, as the task that started the job returned it (its C(results_file)).
      - Empty reads C(<async_dir>/<jid>), with C(~) as the remote user's home directory; give the path where the
        node's E(HOME) may differ from it.
    type: str
    default: ""
  progress_file:
    description:
      - The O(pinned.images.prefetch#module:progress_file) of the job; empty prints no progress.
    type: str
    default: ""
  run_id:
    description:
      - The O(pinned.images.prefetch#module:run_id) of the job; a progress file of another run is not printed.
    type: str
    default: ""
  interval:
    description: Seconds between two reads of O(progress_file).
    type: float
    default: 10.0
  poll:
    description: Seconds between two checks whether the job has ended.
    type: float
    default: 0.25
  timeout:
    description: Seconds after which the task fails when the job has not ended (the job itself goes on).
    type: float
    default: 14400.0
seealso:
  - module: pinned.images.prefetch
  - module: ansible.builtin.async_status
"""

EXAMPLES = r"""
- name: Start the prefetch
  become: true
  pinned.images.prefetch:
    images:
      - quay.io/org/app@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9
    progress_file: /var/tmp/pinned-images-prefetch.json
    run_id: run-1
  async: 14400
  poll: 0
  register: started

- name: Follow it and get its result
  become: true
  pinned.images.prefetch_job:
    jid: "{{ started.ansible_job_id }}"
    results_file: "{{ started.results_file }}"
    progress_file: /var/tmp/pinned-images-prefetch.json
    run_id: run-1
  register: prefetched
"""

RETURN = r"""
images:
  description: One entry per image, as P(pinned.images.prefetch#module) returns them; the other keys of that module's
    result (RV(pinned.images.prefetch#module:totals), RV(pinned.images.prefetch#module:runtime), ...) are returned
    too.
  returned: when the job ended
  type: list
  elements: dict
progress_reads:
  description: How many times the progress file was read.
  returned: always
  type: int
  sample: 2
status_checks:
  description: How many times the job's status was read.
  returned: always
  type: int
  sample: 5
"""
