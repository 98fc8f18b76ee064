# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Progress of a long sub-command on stderr, drawn by tqdm.

The bar counts what the command can know the total of (packets of a bag,
seconds of a simulated scene or of a detection window), so that tqdm can
give an ETA; the text after it says how many seconds of sensor time are
done and how many events per second of wall time go through. It is shown
only when stderr is a terminal and ``--quiet`` was not given: logs and
pipes get no carriage-return noise.
"""

from __future__ import annotations

import sys
import time
from typing import IO

from tqdm import tqdm


def progress_enabled(quiet: bool, stream: IO[str] | None = None) -> bool:
    """Whether to draw progress: not ``quiet`` and ``stream`` (stderr) is a terminal."""
    stream = sys.stderr if stream is None else stream
    return not quiet and bool(getattr(stream, 'isatty', lambda: False)())


class Progress:
    """A tqdm bar of ``total`` ``unit`` (None: unknown, no ETA) with sensor time and rate.

    ``enabled`` None means :func:`progress_enabled` of stderr; ``file`` is
    where to draw (stderr by default; tests pass a StringIO).
    """

    #: at most this often [s] the text is rebuilt (the bar itself is tqdm's to pace)
    REFRESH_S = 0.2

    def __init__(self, total: float | None, label: str, unit: str = 'packets',
                 enabled: bool | None = None, file: IO[str] | None = None) -> None:
        enabled = progress_enabled(False) if enabled is None else enabled
        self._bar = tqdm(total=total if total else None, desc=label, unit=unit,
                         disable=not enabled, file=file if file is not None else sys.stderr,
                         dynamic_ncols=True, mininterval=self.REFRESH_S, leave=True,
                         bar_format=None if total else '{desc}: {n_fmt} {unit} '
                                                       '[{elapsed}{postfix}]')
        self._last = 0.0

    @property
    def enabled(self) -> bool:
        """True when the bar is drawn."""
        return not self._bar.disable

    def update(self, done: float, sensor_s: float, events: int) -> None:
        """Move the bar to ``done``; note ``sensor_s`` of sensor time and ``events`` so far."""
        if self._bar.disable:
            return
        now = time.monotonic()
        total = self._bar.total
        if now - self._last < self.REFRESH_S and (total is None or done < total):
            return
        self._last = now
        elapsed = max(self._bar.format_dict['elapsed'], 1e-9)
        self._bar.set_postfix_str(f'{sensor_s:.2f} s sensor, {events / elapsed / 1e6:.1f} M '
                                  'events/s', refresh=False)
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        """Draw the last state and end the line."""
        self._bar.close()
