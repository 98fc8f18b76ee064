# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Output of the benchmark scripts: print the markdown report, and keep it when asked."""

from __future__ import annotations


def emit(lines: list[str], out: str | None) -> None:
    """Print the report lines; also write them to ``out`` when given."""
    text = '\n'.join(lines)
    print(text)
    if out:
        with open(out, 'w') as fh:
            fh.write(text + '\n')
