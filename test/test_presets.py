# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Tracker presets (paper / release / default), the deviation list, preset selection."""

from dataclasses import fields

import pytest

from helixtrack_ros.core.params import TrackerParams
from helixtrack_ros.core.presets import (
    DEVIATIONS,
    PRESETS,
    apply_preset,
    deviation_off,
    deviation_on,
    switch_fields,
)
from helixtrack_ros.pipeline.config import CHOICES, PipelineConfig, check_choice


def test_paper_preset_sets_exactly_the_s3_values():
    p = apply_preset('paper')
    # supplement S3, "the complete set of parameters we searched for and their final values"
    assert p.q_jerk == 400.0
    assert (p.lambda_phi, p.lambda_r, p.lambda_pol, p.lambda_band, p.lambda_bto) == \
        (1.0, 1.0, 0.25, 5.0, 1.0)
    assert (p.r_in, p.r_out) == (0.2, 1.5)
    assert p.gamma_t == 6.0 and p.gamma_persp == 1.0


def test_paper_preset_turns_off_every_switchable_deviation():
    p = apply_preset('paper')
    assert p.bto_sectors == 1 and p.bto_p_in_max < 0 and p.bto_p_out_min < 0
    assert p.pose_fast_us == 0 and p.pose_fast_rpm == 0.0 and p.pose_timer_us == 0
    assert p.gn_target_events == 0 and p.ekf_polarity == 0 and p.pol_adapt == 0
    assert p.gn_max_step == 10.0 and p.sign_rpm_span == 0.0
    # every rule of the paper that needed a kernel switch (#13): R with w_vm and one EKF
    # update per event (Sec. 3.4); S1's BTO: p = C_band / (C_core + eps) with the released
    # bounds 0.5, softplus penalty, once per batch like the regulariser (Eq. loss); plain
    # damped GN on Eq. 1's q (s, not log s); a short prefix for the sign, phi0 = 0
    assert p.ekf_r_vm == 1 and p.ekf_fold == 0
    assert (p.bto_ratio, p.bto_hinge, p.bto_weight_n) == (0, 0, 0)
    assert (p.bto_p_in_min, p.bto_p_out_max) == (0.5, 0.5)
    assert p.gn_psi_stiff == 0 and p.gn_log_scale == 0
    assert p.sign_prefix == 1 and p.sign_lock_phase == 0
    # each switchable deviation differs from the default in at least one field, in the
    # preset that turns it off
    default = TrackerParams()
    for d in DEVIATIONS:
        if d.fields:
            off = apply_preset(d.preset)
            assert any(getattr(off, f) != getattr(default, f) for f in d.fields), d.name
    # only signed_psi (a correction of the paper) has no switch
    assert [d.name for d in DEVIATIONS if not d.fields] == ['signed_psi']


def test_one_deviation_switches_alone_with_its_bounds_converted():
    """deviation_off / deviation_on: one row's fields from the other preset; BTO bounds
    move to the ratio in force (b / (1 + b) on C_band / (C_band + C_core))."""
    by_name = {d.name: d for d in DEVIATIONS}
    assert deviation_off(by_name['q_jerk']) == {'q_jerk': 400.0}
    assert deviation_off(by_name['release_r_without_vm']) == {'ekf_r_vm': 0}
    assert deviation_on(by_name['release_r_without_vm']) == {**PRESETS['release'],
                                                             'ekf_r_vm': 1}
    off = deviation_off(by_name['bto_bounds'])
    assert off['bto_p_in_min'] == pytest.approx(1 / 3) and off['bto_p_in_max'] == -1.0
    off = deviation_off(by_name['bto_ratio'])
    assert off['bto_ratio'] == 0 and off['bto_p_in_min'] == pytest.approx(0.62 / 0.38)
    assert off['bto_p_out_max'] == pytest.approx(0.09 / 0.91)
    on = deviation_on(by_name['bto_ratio'])
    assert on['bto_ratio'] == 1 and on['bto_p_in_min'] == pytest.approx(1 / 3)
    assert apply_preset('default', on).q_jerk == 400.0


def test_presets_differ_only_in_named_switches():
    names = {f.name for f in fields(TrackerParams)}
    assert switch_fields() <= names
    for name, overrides in PRESETS.items():
        assert set(overrides) <= switch_fields(), name
    assert PRESETS['default'] == {}
    assert apply_preset('default') == TrackerParams()
    release = apply_preset('release')
    diff = {k for k, v in release.to_dict().items() if getattr(apply_preset('paper'), k) != v}
    # the release (helixtrack-facts.md): a 100 ms pose timer, R without w_vm, log s
    assert diff == {'pose_timer_us', 'ekf_r_vm', 'gn_log_scale'}
    assert release.pose_timer_us == 100_000 and release.ekf_r_vm == 0
    assert release.gn_log_scale == 1
    # rows without a switch say why; names are unique
    assert all(d.kernel for d in DEVIATIONS if not d.fields)
    assert len({d.name for d in DEVIATIONS}) == len(DEVIATIONS)


def test_overrides_go_on_top_of_a_preset():
    p = apply_preset('paper', {'q_jerk': 500.0, 'pose_fast_us': 1000})
    assert p.q_jerk == 500.0 and p.pose_fast_us == 1000 and p.gamma_persp == 1.0
    with pytest.raises(ValueError, match='unknown preset'):
        apply_preset('papers')
    with pytest.raises(ValueError, match='no_such'):
        apply_preset('paper', {'no_such': 1.0})


def test_parameter_file_selects_a_preset(tmp_path):
    path = tmp_path / 'p.yaml'
    path.write_text('/**:\n  ros__parameters:\n    preset: paper\n'
                    '    tracker:\n      q_jerk: 500.0\n')
    config = PipelineConfig.from_yaml(str(path))
    assert config.tracker == apply_preset('paper', {'q_jerk': 500.0})
    assert PipelineConfig.from_ros_params({}).tracker == TrackerParams()
    assert PipelineConfig.from_ros_params({'preset': 'release'}).tracker == \
        apply_preset('release')
    with pytest.raises(ValueError, match="parameter preset: must be 'default' or"):
        PipelineConfig.from_ros_params({'preset': 'paper2'})
    assert CHOICES['preset'][0][0] == 'default'
    assert set(CHOICES['preset'][0]) == set(PRESETS)
    assert check_choice('preset', 'paper') is None


def test_node_declares_the_preset_and_starts_its_tracker_values_from_it():
    pytest.importorskip('rclpy')
    pytest.importorskip('event_camera_msgs.msg')
    import node_fixtures as F  # noqa: N812
    import rclpy
    from rclpy.parameter import Parameter

    from helixtrack_ros.io.params_file import flatten
    from helixtrack_ros.pipeline.config import parameter_table
    from helixtrack_ros.ros import node as hn

    def make(ctx, tree):
        # the stand-in pipeline with the real parameter table
        return hn.HelixtrackNode(context=ctx, parameter_overrides=[
            Parameter(k, value=v) for k, v in flatten(tree).items()],
            **{**F.STANDIN_KWARGS, 'parameters': parameter_table()})

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        node = make(ctx, {**F.TWO_ROTORS, 'preset': 'paper'})
        try:
            p = node._pipe.params
            assert p['preset'] == 'paper' and node.describe_parameter('preset').read_only
            assert p['tracker.q_jerk'] == 300.0 and p['tracker.gamma_persp'] == 1.0
            assert PipelineConfig.from_ros_params(p).tracker == \
                apply_preset('paper', {'q_jerk': 300.0})
        finally:
            node.destroy_node()
        with pytest.raises(Exception, match='preset'):
            make(ctx, {**F.TWO_ROTORS, 'preset': 'paper2'})
    finally:
        rclpy.try_shutdown(context=ctx)


def test_deviations_doc_has_every_row():
    """docs/DEVIATIONS.md is generated from DEVIATIONS: each row appears once."""
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / 'docs' / 'DEVIATIONS.md').read_text()
    rows = [line for line in text.splitlines() if line.count(' | ') >= 4]
    for d in DEVIATIONS:
        assert sum(line.startswith(f'| {d.name} |') for line in rows) == 1, d.name


def test_cli_track_and_detect_take_a_preset(tmp_path):
    """``helixtrack track --preset`` replaces the file's preset (its tracker.* values stay
    on top); ``helixtrack detect --preset`` writes it into the parameter file."""
    import yaml

    from helixtrack_ros.cli import main
    from helixtrack_ros.cli.track import load_config
    from helixtrack_ros.io.params_file import load_ros_params, rotor_params_tree, write_ros_params

    params = tmp_path / 'p.yaml'
    tree = rotor_params_tree([{'name': 'a', 'center_px': [100.0, 100.0], 'radius_px': 40.0,
                               'rpm': 3000.0, 'blades': 2}])
    tree['tracker'] = {'kappa': 10.0}
    write_ros_params(params, tree)
    paper = load_config(str(params), 'paper').tracker
    assert paper == apply_preset('paper', {'kappa': 10.0})
    assert paper.q_jerk == PRESETS['paper']['q_jerk'] != TrackerParams().q_jerk
    assert load_config(str(params)).tracker == apply_preset('default', {'kappa': 10.0})
    with pytest.raises(SystemExit):
        main(['track', 'x', '--out', str(tmp_path / 'o'), '--preset', 'nonsense'])

    scene = tmp_path / 'scene'
    assert main(['simulate', '--scenario', 'lone_constant', '--duration', '0.15',
                 '--out', str(scene), '-q']) == 0
    out = tmp_path / 'det.yaml'
    assert main(['detect', str(scene / 'events'), '--out', str(out), '--preset', 'paper',
                 '-q']) == 0
    assert load_ros_params(out)['preset'] == 'paper'
    assert 'preset' in yaml.safe_load(out.read_text())['/**']['ros__parameters']
