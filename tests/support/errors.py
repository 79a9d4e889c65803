# SPDX-License-Identifier: GPL-3.0-or-later
"""The one error of the lab."""


class LabError(Exception):
    """The lab could not do what was asked; the message says why (and where the log is)."""
