# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Offline pictures (#15.3): detect.png and overlay.png show every rotor, labels apart."""

from itertools import combinations

import numpy as np
import pytest

from helixtrack_ros.cli import main, track_bag
from helixtrack_ros.cli.detect import detect_in_bag, draw_detections
from helixtrack_ros.cli.pictures import Frame, Mark, draw_frames, mark_text
from helixtrack_ros.debug_image import detection_homography


def _no_overlap(labels):
    boxes = [lab.box for panel in labels for lab in panel]
    for a, b in combinations(boxes, 2):
        assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)


def _mark(name, x, y, r):
    d = type('D', (), {'radius_px': r, 'psi_rad': 0.0, 'center_px': (x, y),
                       'perspective': (0.0, 0.0)})()
    return Mark(name, detection_homography(d), 3, -1, 4321.0)


def test_crowded_rotors_get_every_label_and_none_overlaps(tmp_path):
    # seven rotors, two of them on top of each other and one at the image edge
    marks = [_mark(f'r{i}', x, y, 30) for i, (x, y) in enumerate(
        [(100, 100), (150, 100), (200, 110), (100, 160), (100, 160), (160, 170), (5, 5)])]
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 320, 5000), rng.integers(0, 240, 5000)
    frames = [Frame(t, x, y, rng.integers(0, 2, 5000), marks) for t in (0.1, 0.2)]
    labels = draw_frames(tmp_path / 'crowd.png', 320, 240, frames, 'crowd')
    assert (tmp_path / 'crowd.png').stat().st_size > 5_000
    assert [[lab.text for lab in panel] for panel in labels] == [
        [mark_text(m) for m in marks]] * 2
    assert '3 blades, dir -1' in labels[0][0].text and '4321 RPM' in labels[0][0].text
    _no_overlap(labels)


@pytest.fixture(scope='module')
def quad(tmp_path_factory):
    out = tmp_path_factory.mktemp('quad')
    assert main(['simulate', '--scenario', 'quadcopter_4m', '--ego-level', '2', '--duration',
                 '0.3', '--seed', '11', '--out', str(out)]) == 0
    return out


def test_detect_writes_detect_png_with_every_rotor(quad, tmp_path, capsys):
    assert main(['detect', str(quad / 'events'), '--out', str(tmp_path / 'p.yaml')]) == 0
    assert f'picture: {tmp_path / "detect.png"}' in capsys.readouterr().out
    assert (tmp_path / 'detect.png').stat().st_size > 20_000
    found = detect_in_bag(str(quad / 'events'))
    names = [f'rotor_{i}' for i in range(len(found.rotors))]
    labels = draw_detections(tmp_path / 'again.png', found, names, found.rotors)
    assert len(labels) == 3
    for panel in labels:
        assert [lab.text.split('\n')[0] for lab in panel] == names
    _no_overlap(labels)


def test_track_writes_overlay_png_with_every_tracked_rotor(quad, tmp_path):
    info = track_bag(str(quad / 'events'), None, tmp_path / 't', quiet=True)
    assert (tmp_path / 't' / 'overlay.png').stat().st_size > 20_000
    labels = info['overlay_labels']
    assert len(labels) == 3
    for panel in labels:
        assert sorted(lab.text.split('\n')[0] for lab in panel) == [
            'rotor_0', 'rotor_1', 'rotor_2', 'rotor_3']
        assert all('RPM ?' not in lab.text and '2 blades' in lab.text for lab in panel)
    _no_overlap(labels)


@pytest.mark.parametrize('window_s', [0.05, 0.2])
def test_detect_analyses_the_whole_window_asked_for(quad, window_s):
    """--window is the span the detector uses: before, anything past 0.1 s was ignored."""
    found = detect_in_bag(str(quad / 'events'), window_s=window_s)
    assert len(found.rotors) == 4
    t0 = int(found.window.t_us[0])
    for rotor in found.rotors:       # the state refers to the end of the analysed span
        assert abs(rotor.t_us - t0 - window_s * 1e6) < 2_000, (rotor.t_us - t0, window_s)


class _Out:
    def __init__(self, rpm):
        self.rpm_shaft = rpm


def _packet(t0_us, n=5):
    from helixtrack_ros.core.events import EventArrays
    t = np.arange(t0_us, t0_us + 1000, 1000 // n, dtype=np.int64)[:n]
    z = np.zeros(n, np.uint16)
    return EventArrays(t, z, z, np.zeros(n, np.uint8))


def _feed(frames, good_from_ms=0, bad_ms=()):
    """1 ms packets over 300 ms; every rotor has an RPM from ``good_from_ms`` on, except
    in the milliseconds ``bad_ms``."""
    from helixtrack_ros.cli.pictures import PlannedFrames  # noqa: F401 (the class fed)
    when_ready = None
    for k in range(300):
        ok = k >= good_from_ms and k not in bad_ms
        frames.add(k * 1000, _packet(k * 1000), [_Out(5000.0 if ok else float('nan'))], k)
        if frames.ready and when_ready is None:
            when_ready = k
    return when_ready


def test_planned_frames_are_kept_at_their_places_and_ready_before_the_run_ends():
    from helixtrack_ros.cli.pictures import PlannedFrames
    frames = PlannedFrames(300)
    ready = _feed(frames)
    assert frames.places == [50, 150, 250]
    assert [f[0] for f in frames.pick()] == [50_000, 150_000, 250_000]
    assert ready is not None and ready < 260   # (the overlay is drawn while the run goes on)


def test_a_planned_frame_without_every_rpm_is_tried_again_later_in_its_span():
    from helixtrack_ros.cli.pictures import PlannedFrames
    frames = PlannedFrames(300, retry_us=20_000)
    _feed(frames, bad_ms=range(140, 175))
    starts = [f[0] for f in frames.pick()]
    # tried at 150 and 170 ms (both end without every RPM), then at 190 ms
    assert starts == [50_000, 190_000, 250_000]
    assert all(np.isfinite(f[2][0].rpm_shaft) for f in frames.pick())


def test_planned_frames_spread_over_the_tracked_part_a_bad_span_keeps_its_first():
    from helixtrack_ros.cli.pictures import PlannedFrames
    frames = PlannedFrames(300)
    _feed(frames, good_from_ms=100, bad_ms=range(190, 260))
    assert frames.places == [133, 200, 266]   # (from the first packet with every RPM)
    starts = [f[0] for f in frames.pick()]
    assert starts == [133_000, 200_000, 266_000]
    assert not np.isfinite(frames.pick()[1][2][0].rpm_shaft)   # (tried at 200 and 250 ms)


def test_an_unfinished_run_or_one_never_tracked_still_gets_frames():
    from helixtrack_ros.cli.pictures import PlannedFrames
    cut = PlannedFrames(500)   # (a run cut short: 300 of 500 packets)
    assert _feed(cut) is None and not cut.ready
    # (the frames of a FrameSampler kept beside: one every 50 ms, three spread)
    assert cut.places == [83, 250, 416] and [f[0] for f in cut.pick()] == [0, 100_000, 250_000]
    never = PlannedFrames(300)
    assert _feed(never, good_from_ms=1000) is None
    assert [f[0] for f in never.pick()] == [0, 100_000, 250_000]
    # a count lower than the packets (code review: every place fell before the first
    # tracked packet, and the overlay had no frame)
    under = PlannedFrames(100)
    assert _feed(under, good_from_ms=150) is None
    assert [f[0] for f in under.pick()] == [150_000, 200_000, 250_000]


def test_track_sends_the_overlay_to_the_worker_before_the_run_ends(tmp_path_factory, tmp_path,
                                                                   monkeypatch):
    from cli_scenes import simulated

    from helixtrack_ros.cli import picture_worker, track
    scene = simulated(tmp_path_factory, 'lone_constant', 0.6, 1)   # (600 packets)
    seen = []
    real_submit = picture_worker.PictureWorker.submit
    real_note = track._TrackRun._note

    def note(self, pkt, res):
        seen.append(('packet', self.n_packets))
        return real_note(self, pkt, res)

    def submit(self, jobs):
        seen.append(('submit', [name for name, _ in jobs]))
        return real_submit(self, jobs)
    monkeypatch.setattr(track._TrackRun, '_note', note)
    monkeypatch.setattr(picture_worker.PictureWorker, 'submit', submit)
    info = track_bag(str(scene / 'events'), str(scene / 'params.yaml'), tmp_path / 't',
                     quiet=True)
    at = seen.index(('submit', ['frames']))
    assert 500 < at < len(seen) - 64 and len(info['overlay_labels']) == 3
    assert (tmp_path / 't' / 'overlay.png').stat().st_size > 20_000
