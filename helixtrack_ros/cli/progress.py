# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Progress of a long sub-command on stderr (silent when stderr is not a terminal)."""

from __future__ import annotations

import sys
import time


class Progress:
    """A one-line progress bar on stderr (silent when stderr is not a terminal)."""

    def __init__(self, total: int, label: str, enabled: bool | None = None) -> None:
        self.total = max(int(total), 1)
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._last = 0.0

    def update(self, done: int, extra: str = '') -> None:
        """Redraw at most 10 times a second."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and done < self.total:
            return
        self._last = now
        frac = min(done / self.total, 1.0)
        bar = '#' * int(frac * 30)
        sys.stderr.write(f'\r{self.label} [{bar:<30}] {100 * frac:5.1f}% {extra}   ')
        sys.stderr.flush()

    def close(self) -> None:
        """End the line."""
        if self.enabled:
            sys.stderr.write('\n')
