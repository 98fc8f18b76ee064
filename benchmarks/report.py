# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Shared bits of the benchmark scripts: the markdown report, ``--set`` overrides."""

from __future__ import annotations

from helixtrack_ros.core.params import TrackerParams
from helixtrack_ros.core.presets import apply_preset


def tracker_params(items: list[str], preset: str = 'default') -> TrackerParams:
    """Tracker parameters of ``preset`` with ``FIELD=VALUE`` overrides (``--set``)."""
    changes = {}
    for item in items:
        key, _, value = item.partition('=')
        if not hasattr(TrackerParams, key) or not value:
            raise SystemExit(f'--set {item}: expected FIELD=VALUE with a TrackerParams field')
        kind = type(getattr(TrackerParams(), key))
        changes[key] = kind(float(value)) if kind is int else kind(value)
    try:
        return apply_preset(preset, changes)
    except ValueError as exc:
        raise SystemExit(f'--preset {preset}: {exc}') from None


def emit(lines: list[str], out: str | None) -> None:
    """Print the report lines; also write them to ``out`` when given."""
    text = '\n'.join(lines)
    print(text)
    if out:
        with open(out, 'w') as fh:
            fh.write(text + '\n')
