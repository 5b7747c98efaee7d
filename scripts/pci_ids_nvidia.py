#!/usr/bin/env python3
"""Write the NVIDIA section of a pci.ids file as the table gpuop ships.

gpuop names passthrough devices as the KubeVirt GPU device plugin does, from the pci.ids
copy in the plugin's image. Only the plugin's reading of that file matters: the pci.ids
header (Version, Date), the `10de` vendor line and the device lines of its section, in
file order and byte for byte. Subsystem lines and comments are dropped; provenance and
the licence notice are added.

    scripts/pci_ids_nvidia.py /path/to/pci.ids > src/gpuop/catalog/pci-ids-nvidia-VERSION.ids

`--check SHIPPED` compares instead of printing: exit 1 when SHIPPED is not the extract.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

VENDOR = "10de"
_DEVICE_LINE = re.compile(r"^\t[0-9a-fA-F]{4}\s")
_HEADER_FIELD = re.compile(r"^#\t(Version|Date):\s")

NOTICE = """\
#
# gpuop: the NVIDIA (vendor 10de) device names of the pci.ids above, as the KubeVirt GPU
# device plugin reads them to name passthrough resources.
#
# Source: pci.ids from the PCI ID Project, https://pci-ids.ucw.cz/ (maintained by Albert
# Pool, Martin Mares, and other volunteers), taken from the copy the
# kubevirt-gpu-device-plugin image ships at /usr/pci.ids (plugin v1.4.0 to v1.6.0;
# v1.6.0 is the default sandbox device plugin of GPU Operator v26.7.0).
# Kept: the header fields above, the vendor line and every device line of the 10de
# section, verbatim and in order. Dropped: other vendors, subsystem lines, comments.
# Regenerate with scripts/pci_ids_nvidia.py.
#
# Licence: pci.ids can be distributed under either the GNU General Public License
# (version 2 or higher) or the 3-clause BSD License. This extract is distributed under
# the 3-clause BSD License.
#
# SPDX-License-Identifier: BSD-3-Clause
#
# Copyright (c) the contributors to the PCI ID Project (https://pci-ids.ucw.cz/).
# All rights reserved.
#
# Redistribution and use in source and binary forms, with or without modification, are
# permitted provided that the following conditions are met:
#
# 1. Redistributions of source code must retain the above copyright notice, this list of
#    conditions and the following disclaimer.
# 2. Redistributions in binary form must reproduce the above copyright notice, this list
#    of conditions and the following disclaimer in the documentation and/or other
#    materials provided with the distribution.
# 3. Neither the name of the copyright holder nor the names of its contributors may be
#    used to endorse or promote products derived from this software without specific
#    prior written permission.
#
# THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY
# EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF
# MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL
# THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL,
# SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO,
# PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS
# INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT,
# STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF
# THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
#
"""


class ExtractError(ValueError):
    """The input is not a pci.ids file with an NVIDIA section."""


def extract(text: str) -> str:
    """The shipped table for a pci.ids text."""
    lines = text.splitlines()
    header = [line for line in _leading_comments(lines) if _HEADER_FIELD.match(line)]
    if not any(line.startswith("#\tVersion:") for line in header):
        raise ExtractError("no '#\\tVersion:' line in the pci.ids header")
    start = next((n for n, line in enumerate(lines) if line.startswith(VENDOR)), None)
    if start is None:
        raise ExtractError(f"no vendor line starting with {VENDOR}")
    section = [lines[start]]
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            continue
        if not line.startswith("\t"):
            break
        if _DEVICE_LINE.match(line):
            section.append(line)
    if len(section) == 1:
        raise ExtractError(f"the {VENDOR} section has no device lines")
    out = ["#", "#\tList of PCI ID's: NVIDIA devices only", "#", *header]
    return "\n".join(out) + "\n" + NOTICE + "\n".join(section) + "\n"


def _leading_comments(lines: list[str]) -> list[str]:
    comments = []
    for line in lines:
        if not line.startswith("#"):
            break
        comments.append(line)
    return comments


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pci_ids", type=Path, help="a full pci.ids file")
    parser.add_argument(
        "--check",
        type=Path,
        metavar="SHIPPED",
        help="compare with this shipped file instead of printing; exit 1 when it differs",
    )
    args = parser.parse_args(argv)
    try:
        # pci.ids is UTF-8 in practice; a stray byte in a comment must not stop the extract.
        text = args.pci_ids.read_bytes().decode("utf-8", errors="replace")
        table = extract(text)
    except (OSError, ExtractError) as exc:
        print(f"error: {args.pci_ids}: {exc}", file=sys.stderr)
        return 2
    if args.check is None:
        sys.stdout.write(table)
        return 0
    try:
        shipped = args.check.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"error: {args.check}: {exc}", file=sys.stderr)
        return 2
    if shipped != table:
        print(f"{args.check} differs from the NVIDIA section of {args.pci_ids}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
