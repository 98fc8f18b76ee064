# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The pictures of the offline commands, drawn with matplotlib (Agg, no display needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_rpm(path: Path, arrays: dict[str, dict[str, np.ndarray]],
             truth: dict[str, tuple[np.ndarray, np.ndarray]] | None) -> None:
    """rpm.png: every rotor's tracked shaft RPM over sensor time, dashed truth beside it."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 5), dpi=100)
    for i, (name, a) in enumerate(arrays.items()):
        color = f'C{i}'
        if len(a['t_us']):
            ax.plot(a['t_us'] * 1e-6, a['rpm'], color=color, lw=1.2, label=f'{name} tracked')
        if truth and name in truth:
            ax.plot(truth[name][0] * 1e-6, truth[name][1], color=color, lw=0.8, ls='--',
                    alpha=0.8, label=f'{name} truth')
    ax.set_xlabel('sensor time [s]')
    ax.set_ylabel('shaft RPM')
    ax.grid(alpha=0.3)
    # the legend beside the axes and fixed margins: a "best" legend place and a tight
    # layout cost 0.4 s of drawing (they test every data point and draw twice)
    fig.subplots_adjust(left=0.08, right=0.78, top=0.92, bottom=0.1)
    if ax.get_legend_handles_labels()[0]:   # (nothing tracked: an empty plot, no warning)
        ax.legend(fontsize=8, loc='upper left', bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax.set_title('helixtrack: shaft RPM per rotor')
    fig.savefig(path)
    plt.close(fig)
