# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Leaves: the node modules' Python dependencies (grpcio, protobuf) and the controller's wheelhouse of them."""
