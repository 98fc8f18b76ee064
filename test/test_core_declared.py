# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Settings declared by JSON tables: fields, coercion, range checks, packaging."""

from dataclasses import fields
import math
from pathlib import Path
import re

import pytest

from helixtrack_ros.core.declared import describe, read_table
from helixtrack_ros.core.detection_types import DetectionParams
from helixtrack_ros.core.params import TrackerParams
from helixtrack_ros.sim.variants import SimVariant

ROOT = Path(__file__).resolve().parents[1]
DECLARED = [(TrackerParams, 'tracker_params.json', 'helixtrack_ros.core'),
            (DetectionParams, 'detection_params.json', 'helixtrack_ros.core'),
            (SimVariant, 'variant_fields.json', 'helixtrack_ros.sim')]


@pytest.mark.parametrize('cls, table, package', DECLARED)
def test_fields_come_from_the_table_in_its_order(cls, table, package):
    rows = read_table(table, package)
    assert [f.name for f in fields(cls)] == list(rows)
    obj = cls()
    for name, row in rows.items():
        value = getattr(obj, name)
        assert value == row['default'] and type(value) is type(row['default']), name
        lo, hi = row.get('min'), row.get('max')
        assert (lo is None or value >= lo) and (hi is None or value <= hi), name
        assert row['description'] and set(row) <= {'group', 'default', 'min', 'max', 'unit',
                                                   'description'}, name
        assert describe(cls)[name] == (row['description'], row.get('unit', ''), lo, hi)


def test_values_are_coerced_to_the_field_type():
    p = DetectionParams(window_us=50_000.0, coherence_min=1)
    assert type(p.window_us) is int and type(p.coherence_min) is float


@pytest.mark.parametrize('kwargs, message', [
    ({'window_us': True}, 'detection parameter window_us must be a number'),
    ({'window_us': '100'}, 'detection parameter window_us must be a number'),
    ({'window_us': 2.5}, 'window_us must be an integer, got 2.5'),
    ({'coherence_min': math.nan}, 'coherence_min must be finite'),
    ({'coherence_min': math.inf}, 'coherence_min must be finite'),
    ({'bin_us': 0}, 'bin_us=0 must be >= 1$'),
    ({'ring_outer': 1.5}, re.escape('ring_outer=1.5 is outside [0.0, 1.0]')),
])
def test_bad_values_are_refused_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DetectionParams(**kwargs)


def test_every_table_is_installed():
    """setup.py's package_data takes every JSON table of the package."""
    setup = (ROOT / 'setup.py').read_text()
    globs = re.search(r'package_data=\{PACKAGE: \[([^\]]*)\]', setup).group(1)
    patterns = [g.strip().strip("'") for g in globs.split(',') if g.strip()]
    pkg = ROOT / 'helixtrack_ros'
    for path in pkg.rglob('*.json'):
        rel = path.relative_to(pkg)
        assert any(rel.match(p) for p in patterns), rel
