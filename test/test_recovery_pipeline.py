# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Pipeline recovery: a LOST rotor is re-detected and re-initialised (beyond the paper)."""

from concurrent.futures import Future

import numpy as np
import pytest

from helixtrack_ros.core.health import LOST, TRACKING
from helixtrack_ros.evaluation import rotor_inits_from_scene
from helixtrack_ros.pipeline import ERROR, OK, PipelineConfig, TrackingPipeline
from helixtrack_ros.pipeline.config import parameter_table
from helixtrack_ros.sim import Simulator, make_scenario


def _run(scene, seed, **cfg):
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1,
                                           **cfg))
    rows = []
    for chunk in Simulator(scene, seed=seed).chunks(chunk_us=1000):
        outs = pipe.process_events(chunk)
        if outs:
            rows.append([(o.t_us, o.health, o.level, o.message, o.rpm_shaft) for o in outs])
    return pipe, rows


def _recovered_us(rows, k, rotor, t_from_us, tol=0.02, hold_us=30_000):
    """First time >= t_from from which rotor k is TRACKING within tol for hold_us."""
    t = np.array([r[k][0] for r in rows])
    ok = np.array([r[k][1] == TRACKING and abs(r[k][4] - rotor.rpm_shaft(np.array(
        [r[k][0]]))[0]) <= tol * rotor.rpm_shaft(np.array([r[k][0]]))[0] for r in rows])
    for i in np.nonzero((t >= t_from_us) & ok)[0]:
        hold = (t >= t[i]) & (t <= t[i] + hold_us)
        if ok[hold].all() and t[i] + hold_us <= t[-1]:
            return int(t[i])
    return None


@pytest.fixture(scope='module')
def big_jump():
    scene = make_scenario('lone_constant', 0.45, seed=2, jump=('rotor', 0.15, 0.0, 0.9))
    return scene, _run(scene, 2)


def test_big_jump_is_re_detected_within_150_ms(big_jump):
    scene, (pipe, rows) = big_jump
    assert pipe.counters['recoveries'] == 1
    assert 1 <= pipe.counters['recovery_attempts'] <= 2
    lost = [r[0] for r in rows if r[0][1] == LOST]
    assert lost and lost[0][2] == ERROR and lost[0][3].startswith('lost: ')
    assert lost[0][3].endswith('re-detecting')
    back = _recovered_us(rows, 0, scene.rotors[0], 150_000)
    assert back is not None and back - 150_000 <= 150_000
    diag = {d['name']: d for d in pipe.diagnostics()}
    rotor = diag['helixtrack: rotor rotor']
    assert rotor['values']['recoveries'] == '1' and rotor['values']['health'] == 'TRACKING'
    assert rotor['level'] == OK and rotor['message'] == 'tracking'
    assert diag['helixtrack: pipeline']['values']['recoveries'] == '1'
    # the re-detection is kept for the debug image
    (t_det, name, det), = pipe.detections
    assert name == 'rotor' and 150_000 < t_det < 300_000 and det.blades == 2
    assert pipe.recent_detections(10**9) == [('rotor', det)]
    assert pipe.recent_detections(0) == []


def test_hidden_quadcopter_rotor_comes_back_and_the_others_stay_ok():
    scene = make_scenario('quadcopter_4m', 0.5, 1, seed=4,
                          hide_rotor=('rear_right', 0.1, 0.3))
    pipe, rows = _run(scene, 4)
    names = [r.name for r in scene.rotors]
    k = names.index('rear_right')
    during = [r[k] for r in rows if 140_000 <= r[k][0] < 300_000]
    assert all(o[1] == LOST and 'starved' in o[3] for o in during)
    # nothing to detect while it is hidden: no detection attempt is wasted on it
    assert pipe.counters['recovery_attempts'] <= 1
    back = _recovered_us(rows, k, scene.rotors[k], 300_000)
    assert back is not None and back - 300_000 <= 150_000
    for j, name in enumerate(names):
        if j != k:
            assert all(r[j][1] == TRACKING and r[j][2] == OK for r in rows
                       if r[j][0] >= 50_000), name


def test_recovery_can_be_switched_off_and_is_configurable(big_jump):
    scene, _ = big_jump
    pipe, rows = _run(scene, 2, recovery=False)
    assert pipe.counters['recovery_attempts'] == 0
    assert not any(r[0][3].endswith('re-detecting') for r in rows)
    cfg = PipelineConfig.from_ros_params({'rotor_names': [], 'recovery': False,
                                          'recovery_window_us': 80_000,
                                          'recovery_margin': 0.5})
    assert (cfg.recovery, cfg.recovery_window_us, cfg.recovery_margin) == (False, 80_000, 0.5)
    assert 'recovery_retry_us' in parameter_table()


def test_a_re_detection_minimum_above_its_window_is_refused():
    """Before: accepted, and the minimum then ignored (min(window, max(min, ...)));
    the node and the command line both build their config here."""
    with pytest.raises(ValueError, match='recovery_min_us=200000 is above '
                                         'recovery_window_us=50000'):
        PipelineConfig.from_ros_params({'rotor_names': [], 'recovery_min_us': 200_000,
                                        'recovery_window_us': 50_000})
    cfg = PipelineConfig.from_ros_params({'recovery_min_us': 50_000,
                                          'recovery_window_us': 50_000})
    assert cfg.recovery_min_us == cfg.recovery_window_us == 50_000


def test_background_re_detection_recovers_without_stalling_a_packet(big_jump):
    import time

    scene, _ = big_jump
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1,
                                           detect_in_background=True))
    rows = []
    slowest = 0.0
    for chunk in Simulator(scene, seed=2).chunks(chunk_us=1000):
        t0 = time.perf_counter()
        outs = pipe.process_events(chunk)
        slowest = max(slowest, time.perf_counter() - t0)
        if outs:
            rows.append([(o.t_us, o.health, o.level, o.message, o.rpm_shaft) for o in outs])
            # packets keep flowing while the detection runs in its thread
            time.sleep(0.0005)
    pipe.close()
    assert pipe.counters['recoveries'] == 1 and len(pipe.detections) == 1
    back = _recovered_us(rows, 0, scene.rotors[0], 150_000)
    assert back is not None and back - 150_000 <= 150_000
    print(f'slowest packet {1e3 * slowest:.1f} ms')


class _QueuedDetector:
    """The live node's one detector thread, deterministic: each detection takes ``span_us``
    of sensor time and they are done in the order sent; the clock is the sensor time of
    the latest search step (``RotorRecovery.step``, patched by :func:`_late_run`)."""

    def __init__(self, span_us: int) -> None:
        self.span_us, self.now_us, self._free_us = span_us, 0, 0
        self.sent: list[Future] = []
        self.most_waiting = 0          # the most detections sent and not done at once

    def submit(self, fn, *args, **kwargs):
        self._free_us = max(self.now_us, self._free_us) + self.span_us
        sent = _ClockFuture(fn(*args, **kwargs), self, self._free_us)
        self.sent.append(sent)
        self.most_waiting = max(self.most_waiting, sum(not s.done() for s in self.sent))
        return sent


class _ClockFuture(Future):
    """A detection of :class:`_QueuedDetector`, done once its clock reaches ``done_us``."""

    def __init__(self, value, detector: _QueuedDetector, done_us: int) -> None:
        super().__init__()
        self._value, self._detector, self._done_us = value, detector, done_us

    def done(self) -> bool:
        if self._detector.now_us >= self._done_us and not super().done():
            self.set_result(self._value)
        return super().done()


def _late_run(monkeypatch, scene, raw, span_us, stride, batch, rotors=None):
    """Track ``raw`` packets with every background detection taking ``span_us`` of sensor
    time on one detector thread (:class:`_QueuedDetector`), at event stride ``stride``:
    (published values, pipeline, detector); every published value is within 1 % of the
    truth and every rotor searched for reads LOST."""
    from helixtrack_ros.pipeline import recovery
    from helixtrack_ros.pipeline.rotors import RotorBank

    detector = _QueuedDetector(span_us)
    monkeypatch.setattr(RotorBank, 'detector', lambda self: detector)
    step = recovery.RotorRecovery.step

    def clocked_step(self, bank, r, ev, t_last, k=-1):
        detector.now_us = max(detector.now_us, t_last)
        return step(self, bank, r, ev, t_last, k)

    monkeypatch.setattr(recovery.RotorRecovery, 'step', clocked_step)
    pipe = TrackingPipeline(PipelineConfig(rotors=rotors or rotor_inits_from_scene(scene),
                                           threads=1, detect_in_background=True))
    published = 0
    for k in range(0, len(raw), batch):
        pipe.set_stride(stride)
        for res in pipe.process_packets(raw[k:k + batch]):
            for o, rotor in zip(res.rotors, scene.rotors):
                if o.message.endswith('re-detecting'):
                    assert o.health == LOST, o.message
                if np.isfinite(o.rpm_shaft):
                    published += 1
                    truth = float(rotor.rpm_shaft(np.array([res.t_us]))[0])
                    assert abs(o.rpm_shaft - truth) < 0.01 * truth
    return published, pipe, detector


def test_a_background_re_detection_done_late_is_brought_to_the_present_by_replay(monkeypatch):
    """Found by the live-node review: behind real time, a background re-detection was done
    tens to hundreds of ms of sensor time after its events; under camera motion the rotor
    had moved on, and trackers re-initialised there lost it again (48-61 attempts, no
    recovery). Detecting again on the latest events took over half of the packets'
    thread. Each detection is now brought to the present by the rotor's tracker, run
    through the region's events kept meanwhile, and the layout reads where the trackers
    end. quadcopter_4m at egomotion 5, every rotor started 17 px off its place (all lost
    at once), stride 4, each detection done 40 packets late: 1,835 TRACKING values with
    the detection repeated on the latest events, 2,044 with the replay (each detection
    40 ms on one detector thread: 1,890; 1,936 with a lost rotor's detection sent only to
    a free thread)."""
    from dataclasses import replace

    from test_pipeline import _raw_packets

    scene = make_scenario('quadcopter_4m', 0.6, 5, seed=1, sensor_size=(640, 480))
    inits = [replace(i, center_px=(i.center_px[0] + 12, i.center_px[1] - 12))
             for i in rotor_inits_from_scene(scene)]
    published, pipe, _ = _late_run(monkeypatch, scene, _raw_packets(scene, 1), 40_000, 4, 20,
                                   inits)
    assert pipe.counters['recoveries'] >= 3
    assert published > 1850


def test_a_motor_that_stops_and_restarts_is_found_by_a_detection_staler_than_the_window(
        monkeypatch):
    """Found by the red-team review of the node under load: a lone rotor stopped (LOST,
    implausible RPM) and spun up again; each background re-detection came back 100-220 ms
    stale, found it, and was dropped, the region's events kept only for the last 100 ms
    (recovery_window_us), so that its replay had nothing to start from: LOST to the end of
    the stream (2.4 s, 15 attempts). The events since a running detection's end are now
    kept for its replay. Here each detection takes 150 ms of sensor time."""
    from helixtrack_ros.sim.schedules import RpmSchedule

    scene = make_scenario('lone_constant', 1.0, seed=1)
    rotor = scene.rotors[0]
    rotor.schedule = RpmSchedule(knots_t_us=(0.0, 0.2e6, 0.3e6, 0.4e6, 0.5e6),
                                 knots_rpm=(1e4, 1e4, 0.0, 0.0, 1e4),
                                 theta0_rad=rotor.schedule.theta0_rad)
    from test_pipeline import _raw_packets
    raw = _raw_packets(scene, 1)
    published, pipe, _ = _late_run(monkeypatch, scene, raw, 150_000, 1, 5)
    assert pipe.counters['recoveries'] >= 1
    assert published > 330            # (388 with the fix: about 250 before the stop)


def test_late_re_detections_through_lost_packets_publish_no_wrong_value(monkeypatch):
    """quadcopter_4m at egomotion 5, stride 4, 40 of every 100 packets lost, each
    detection done 30 packets late (the replay crosses the losses): a re-initialised
    front_left learnt its first references at a spill of 0.40-0.51 (its pose off the
    tips, the scale drifting 12 %) and was published 0.8-1.3 % off once TRACKING; the
    first references now need a spill of at most health_spill_seed (0.45)."""
    from test_pipeline import _raw_packets

    scene = make_scenario('quadcopter_4m', 0.6, 5, seed=1)
    raw = [p for i, p in enumerate(_raw_packets(scene, 1)) if i < 100 or i % 100 >= 40]
    published, pipe, _ = _late_run(monkeypatch, scene, raw, 30_000, 4, 8)
    assert pipe.counters['recoveries'] >= 5
    assert published > 330


def test_lost_rotors_never_queue_two_re_detections_on_the_detector_thread(monkeypatch):
    """Found by the live review: with one detector thread, four rotors lost at once each
    sent a detection (45-60 ms of CPU each on a 346 x 260 egomotion 6 scene); queued, they
    came back 0.15-0.2 s stale, beyond the 100 ms of events kept for their replay, and no
    rotor came back in 2 s (offline, 50 ms each: 10 TRACKING values of 8,000). A lost
    rotor now shares a detection sent by another whose search region holds its centre,
    or sends its own once the thread is free: 1,081 values, none over 1 % off. Here:
    every rotor started 12 px off its place (all lost at once), stride 4, 60 ms per
    detection: 1,016 TRACKING values with detections queued, 1,816 now."""
    from dataclasses import replace

    from test_pipeline import _raw_packets

    scene = make_scenario('quadcopter_4m', 0.6, 5, seed=1, sensor_size=(640, 480))
    inits = [replace(i, center_px=(i.center_px[0] + 12, i.center_px[1] - 12))
             for i in rotor_inits_from_scene(scene)]
    published, pipe, detector = _late_run(monkeypatch, scene, _raw_packets(scene, 1), 60_000,
                                          4, 20, inits)
    assert detector.most_waiting == 1
    assert pipe.counters['recoveries'] >= 3
    assert published > 1700


def test_a_lost_rotor_shares_a_recent_detection_whose_region_holds_its_centre():
    from helixtrack_ros.core.events import EventArrays
    from helixtrack_ros.pipeline.rotors import SHARED_MARGIN, RotorBank

    class Later:
        def submit(self, fn, *args, **kwargs):
            return Future()                     # never done: still running

    bank = RotorBank(PipelineConfig(rotors=[], recovery_retry_us=25_000), {},
                     lambda: (346, 260))
    bank.detector = lambda: Later()
    ev = EventArrays(np.array([0, 50_000], np.int64), np.zeros(2, np.uint16),
                     np.zeros(2, np.uint16), np.zeros(2, np.uint8))
    sent, end_us = bank.detect_later(ev, (100, 50, 200, 150))
    assert end_us == 50_000 and bank.detector_busy()
    inside = 100 + SHARED_MARGIN * 20.0
    assert bank.shared_detection((inside, 100.0), 20.0, 60_000) == (sent, 50_000)
    assert bank.shared_detection((inside - 1.0, 100.0), 20.0, 60_000) is None
    assert bank.shared_detection((150.0, 150.0), 20.0, 60_000) is None
    # still running, however old its events: shared; once done, only while recent
    assert bank.shared_detection((150.0, 100.0), 20.0, 500_000) == (sent, 50_000)
    sent.set_result([])
    assert not bank.detector_busy()
    assert bank.shared_detection((150.0, 100.0), 20.0, 75_000) == (sent, 50_000)
    assert bank.shared_detection((150.0, 100.0), 20.0, 75_001) is None
    # one sent at a later packet of the batch (rotors step through it one after another):
    # shared; none from before the sensor clock restarted
    sent, _ = bank.detect_later(ev, (100, 50, 200, 150))
    assert bank.shared_detection((150.0, 100.0), 20.0, 40_000) == (sent, 50_000)
    bank.restart()
    assert not bank.detector_busy()
    assert bank.shared_detection((150.0, 100.0), 20.0, 40_000) is None


def test_a_rotor_never_tracked_under_a_moving_camera_is_not_given_a_neighbour():
    """Found by the scene review: quadcopter_3m at 346x260, egomotion 6, seed 3. The camera
    moves the drone by a rotor spacing before front_right is first tracked; its searches
    around its configured place found the left rotors, took the nearest, and published
    the rear left rotor's RPM as its own (67 values, +46 %). The drone's layout now says
    which rotor a detection is (pipeline/layout_match.py)."""
    from test_pipeline import _raw_packets

    scene = make_scenario('quadcopter_3m', 1.0, 6, seed=3, sensor_size=(346, 260))
    raw = _raw_packets(scene, 3)
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    off = {}
    for k in range(0, len(raw), 64):             # batches as `helixtrack track` reads them
        for res in pipe.process_packets(raw[k:k + 64]):
            for o, rotor in zip(res.rotors, scene.rotors):
                truth = float(rotor.rpm_shaft(np.array([res.t_us]))[0])
                if np.isfinite(o.rpm_shaft) and abs(o.rpm_shaft - truth) > 0.05 * truth:
                    off[rotor.name] = off.get(rotor.name, 0) + 1
    assert off == {}
    assert pipe.counters['recoveries'] >= 3


def test_a_search_sees_the_other_rotors_as_they_were_at_its_packet(monkeypatch):
    """A search step runs after every tracker ran the whole batch; the other rotors it
    reads (to tell which detection is which rotor) must be those of its packet, not of the
    batch's end: under camera motion those were 15 px off in a 64-packet batch, and the
    layout refused the rotor's own detection (quadcopter_4m 346x260 egomotion 5 seed 3:
    front_right 894 -> 310 TRACKING rows)."""
    from test_pipeline import _raw_packets

    from helixtrack_ros.pipeline.recovery import RotorRecovery

    seen = []
    step = RotorRecovery.step

    def spy(self, bank, r, ev, t_last, k=-1):
        seen.append((t_last, r, bank.tracking_at(t_last, r, k)))
        return step(self, bank, r, ev, t_last, k)

    monkeypatch.setattr(RotorRecovery, 'step', spy)
    scene = make_scenario('quadcopter_4m', 0.3, 4, seed=2, jump=('rear_right', 0.15, 0.0, 0.9))
    raw = _raw_packets(scene, 2)
    pipe = TrackingPipeline(PipelineConfig(rotors=rotor_inits_from_scene(scene), threads=1))
    published = {}
    for k in range(0, len(raw), 32):
        for res in pipe.process_packets(raw[k:k + 32]):
            for o, out in enumerate(res.rotors):
                if np.isfinite(out.rpm_shaft):
                    h = np.asarray(out.homography)
                    published[res.t_us, o] = (h[0, 2] / h[2, 2], h[1, 2] / h[2, 2])
    checked = 0
    for t, _, others in seen:
        for o, (x, y, _) in others.items():
            if (t, o) in published:
                assert (x, y) == pytest.approx(published[t, o], abs=1e-6)
                checked += 1
    assert checked > 50
