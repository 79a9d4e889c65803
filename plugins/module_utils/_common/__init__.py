# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Leaves: generic helpers with no domain knowledge (errors, secrets, YAML, files, locks, image references)."""
