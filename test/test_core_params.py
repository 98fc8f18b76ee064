# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""TrackerParams and RotorInit: defaults, validation, round trips, descriptors."""

from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from helixtrack_ros.core.params import RotorInit, TrackerParams


def test_defaults_are_ours_with_the_deviations_named():
    """The defaults share the paper's loss weights and annulus and the release's EKF
    values; where they differ from the paper the field is a named deviation switch
    (the paper's values: preset paper, test_presets.py)."""
    from helixtrack_ros.core.presets import PRESETS, switch_fields
    p = TrackerParams()
    assert (p.kappa, p.r_in, p.r_out) == (22.0, 0.2, 1.5)
    assert (p.lambda_phi, p.lambda_r, p.lambda_pol, p.lambda_band) == (1.0, 1.0, 0.25, 5.0)
    assert (p.gamma_t, p.gn_min_events, p.pose_timer_us) == (6.0, 2000, 100_000)
    assert (p.p0_phase_rad2, p.p0_omega_rad2_s2, p.p0_alpha_rad2_s4) == (1.0, 100.0, 1e4)
    # deviations: paper q_jerk 400 and gamma_persp 1.0 (docs/DEVIATIONS.md)
    assert p.q_jerk == 4e6 and p.gamma_persp == 0.1
    assert {'q_jerk', 'gamma_persp'} <= switch_fields()
    assert (PRESETS['paper']['q_jerk'], PRESETS['paper']['gamma_persp']) == (400.0, 1.0)


def test_round_trip_and_describe():
    p = TrackerParams(q_jerk=300.0, gn_target_events=0)
    assert TrackerParams.from_dict(p.to_dict()) == p
    desc = TrackerParams.describe()
    assert list(desc) == [f.name for f in fields(TrackerParams)]
    for name, (text, unit, lo, hi) in desc.items():
        assert text and isinstance(unit, str), name
        assert lo is None or hi is None or lo <= hi, name
        value = getattr(TrackerParams(), name)
        assert (lo is None or value >= lo) and (hi is None or value <= hi), name


def test_each_field_is_declared_once_with_its_metadata():
    """Range, unit, meaning and integer-ness come from the one table, tracker_params.json."""
    import json

    from helixtrack_ros.core import params as module
    table = json.loads((Path(module.__file__).parent / 'tracker_params.json').read_text())
    assert [f.name for f in fields(TrackerParams)] == list(table)
    ints = {f.name for f in fields(TrackerParams) if f.type in ('int', int)}
    assert ints == {k for k, v in table.items() if type(v['default']) is int}
    assert ints == {k for k, v in TrackerParams().to_dict().items() if type(v) is int}
    for f in fields(TrackerParams):
        entry = table[f.name]
        assert TrackerParams.describe()[f.name] == (
            entry['description'], entry.get('unit', ''), entry.get('min'), entry.get('max'))
        assert getattr(TrackerParams(), f.name) == entry['default']
    # an integer field keeps its integer bounds in the message
    with pytest.raises(ValueError, match=r'pol_adapt=2 is outside \[0, 1\]'):
        TrackerParams(pol_adapt=2)


def test_from_dict_rejects_unknown_and_out_of_range():
    with pytest.raises(ValueError, match='no_such_param'):
        TrackerParams.from_dict({'no_such_param': 1.0})
    with pytest.raises(ValueError, match='kappa'):
        TrackerParams.from_dict({'kappa': -1.0})
    with pytest.raises(ValueError, match='gn_min_events'):
        TrackerParams.from_dict({'gn_min_events': 2.5})
    with pytest.raises(ValueError, match='r_out'):
        TrackerParams.from_dict({'r_in': 1.0, 'r_out': 0.5})
    with pytest.raises(ValueError, match='q_jerk'):
        TrackerParams.from_dict({'q_jerk': 'abc'})
    assert TrackerParams.from_dict({'gn_min_events': 100.0}).gn_min_events == 100


def test_config_file_lists_every_field_with_its_default():
    path = Path(__file__).resolve().parents[1] / 'config' / 'helixtrack.yaml'
    doc = yaml.safe_load(path.read_text())['/**']['ros__parameters']
    assert doc['rotor_names'] == [] and doc['preset'] == 'default'
    assert TrackerParams.from_dict(doc['tracker']) == TrackerParams()
    assert set(doc['tracker']) == {f.name for f in fields(TrackerParams)}


def test_rotor_init_validation():
    r = RotorInit('a', (1, 2), 50, 6000, 2)
    assert r.center_px == (1.0, 2.0) and r.direction == 0 and r.perspective == (0.0, 0.0)
    for kwargs, word in [(dict(radius_px=0.0), 'radius_px'), (dict(rpm_shaft=-1.0), 'rpm'),
                         (dict(blades=0), 'blades'), (dict(direction=2), 'direction'),
                         (dict(center_px=(1.0,)), 'center_px'),
                         (dict(perspective=(1.0, 0.0)), 'perspective')]:
        base = dict(name='a', center_px=(1.0, 2.0), radius_px=50.0, rpm_shaft=6000.0, blades=2)
        base.update(kwargs)
        with pytest.raises(ValueError, match=word):
            RotorInit(**base)
    with pytest.raises(ValueError):
        RotorInit('', (1.0, 2.0), 50.0, 6000.0, 2)
