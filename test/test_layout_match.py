# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Which detection of a search is the lost rotor (pipeline/layout_match.py).

Hand-made searches of a quadcopter (the layout of the simulator's 3 m
scene), then random drones, cameras and detectors against the nearest-
detection rule it replaced: the layout must never make a neighbour the lost
rotor where all rotors in the searched region are detected, where the
nearest detection often is that neighbour.
"""

import math

import numpy as np
import pytest

from helixtrack_ros.pipeline.layout_match import layout_pick

#: front_left, front_right, rear_left, rear_right: centre x, y and tip radius [px]
QUAD = [(146.0, 147.0, 19.4), (192.0, 147.0, 19.3), (147.0, 104.0, 18.5), (191.0, 104.0, 18.4)]
FR = 1
REACH = 2.5                                  # r_out + recovery_margin (defaults)


def _region(disc, reach=REACH):
    x, y, rad = disc
    h = reach * rad
    return (math.floor(x - h), math.floor(y - h), math.ceil(x + h), math.ceil(y + h))


def _placed(shift, rotors=range(4)):
    return [(QUAD[i][0] + shift[0], QUAD[i][1] + shift[1], QUAD[i][2]) for i in rotors]


def _pick(dets, tracked=None, last=QUAD[FR], region=None):
    return layout_pick(FR, dets, QUAD, _region(last) if region is None else region,
                       tracked or {}, last, lambda j: True, REACH)


def test_the_camera_moved_by_a_rotor_spacing_the_neighbours_are_not_the_rotor():
    # the drone moved 64 px right: front_right's search around its old place holds the
    # left rotors only (the quadcopter_3m egomotion-6 scene at 527 ms); the nearest
    # detection is front_left
    dets = _placed((64, 15), [0, 2])
    pick = _pick(dets)
    assert pick.index is None
    x0, y0, x1, y1 = pick.widen_to                 # searched next: where the layout puts it
    assert x1 >= QUAD[FR][0] + 64 + QUAD[FR][2]


def test_a_static_drone_fully_detected_gives_each_rotor_its_own_detection():
    dets = _placed((3, -2))
    for r in range(4):
        pick = layout_pick(r, dets, QUAD, _region(QUAD[r], 4.0), {}, QUAD[r],
                           lambda j: True, REACH)
        assert pick.index == r


def test_a_pair_at_the_region_edge_reads_both_ways_and_the_search_widens():
    # front_right and rear_right where they were, the left pair outside the region: the
    # pair is the right pair at no shift or the left pair shifted by a spacing
    region = (150, 60, 236, 190)
    pick = _pick(_placed((0, 0), [1, 3]), region=region)
    assert pick.index is None
    assert pick.widen_to[0] < region[0] and pick.widen_to[2] > region[2]
    # the wider search sees all four: front_right is its own detection again
    wide = pick.widen_to
    assert _pick(_placed((0, 0)), region=wide).index == 1


def test_a_recent_place_under_a_steady_camera_tells_which_pair_it_is():
    # the camera moved the drone 10 px lately: the left pair's reading moves front_right by
    # a rotor spacing (46 px) from its last good place, it is no rival
    region = (150, 60, 236, 190)
    dets = _placed((0, 0), [1, 3])
    pick = layout_pick(FR, dets, QUAD, region, {}, QUAD[FR], lambda j: True, REACH,
                       prior_reach_px=10 + QUAD[FR][2])
    assert pick == (0, None)
    # the camera moved it 40 px lately: both readings stand, the search widens
    pick = layout_pick(FR, dets, QUAD, region, {}, QUAD[FR], lambda j: True, REACH,
                       prior_reach_px=40 + QUAD[FR][2])
    assert pick.index is None and pick.widen_to is not None


def test_how_far_a_rotor_can_be_is_how_far_the_camera_moved_the_drone_lately():
    from types import SimpleNamespace

    from helixtrack_ros.pipeline.recovery import PLACES_MEMORY_US, RotorRecovery

    def q(x, y):
        return [math.log(20.0), 0.0, x, y, 0.0, 0.0]

    shaking, panning = RotorRecovery(), RotorRecovery()
    for i in range(200):                                  # 1 kHz packets, 200 ms
        t = 1000 * i
        shaking.note_good(q(300 + 6 * math.sin(i), 200 + 6 * math.cos(i)), 9000.0, 1, t)
        panning.note_good(q(300 + 0.3 * i, 200.0), 9000.0, 1, t)
    t = 199_000
    assert shaking.prior_reach_px(SimpleNamespace(recs=[shaking]), t + 100_000) < 20 + 17
    assert panning.prior_reach_px(SimpleNamespace(recs=[panning]), t) > 20 + 50
    # the drone's fastest rotor counts for every rotor; an old or untimed place, none
    assert shaking.prior_reach_px(SimpleNamespace(recs=[shaking, panning]), t) > 20 + 50
    assert math.isinf(shaking.prior_reach_px(SimpleNamespace(recs=[shaking]),
                                             t + PLACES_MEMORY_US + 1))
    # seen tracked for 180 ms at a stretch: a longer time since grows the reach as a
    # random walk would (sqrt(720 / 180) = 2 times over 720 ms); a rotor seen for less
    # than PLACES_STRETCH_US says nothing
    near = shaking.prior_reach_px(SimpleNamespace(recs=[shaking]), t + 180_000) - 20
    far = shaking.prior_reach_px(SimpleNamespace(recs=[shaking]), t + 720_000) - 20
    assert far == pytest.approx(2 * near)
    brief = RotorRecovery()
    for i in range(40):
        brief.note_good(q(300 + 0.3 * i, 200.0), 9000.0, 1, 1000 * i)
    assert math.isinf(brief.prior_reach_px(SimpleNamespace(recs=[brief]), 50_000))
    shaking.revert_good(q(300, 200), 150_000)       # its poses from 150 ms: another rotor's
    assert math.isinf(shaking.prior_reach_px(SimpleNamespace(recs=[shaking]), t))
    assert shaking.places[-1][0] < 150_000


def test_a_rotor_off_its_rough_layout_place_is_still_found_by_the_others():
    # front_right sits 1.3 tip radii from where the layout (given roughly) puts it; the
    # others are tracked where the layout says: its detection is nearer its place than any
    # other rotor's, it is front_right (found by the review: the search stuck for good)
    tracked = {i: QUAD[i] for i in (0, 2, 3)}
    dets = [(QUAD[FR][0] + 18.0, QUAD[FR][1] + 17.0, 19.0), (QUAD[3][0], QUAD[3][1], 18.4)]
    pick = _pick(dets, tracked=tracked, region=_region(QUAD[FR], 3.0))
    assert pick.index == 0
    # not when the detection is nearer a neighbour's place than its own
    dets[0] = (QUAD[FR][0] + 2.0, QUAD[FR][1] - 26.0, 19.0)       # 26 px: 1.4 radii
    assert _pick(dets, tracked=tracked, region=_region(QUAD[FR], 3.0)).index is None


def test_a_tracking_neighbour_tells_which_pair_it_is():
    region = (150, 60, 236, 190)
    dets = _placed((0, 0), [1, 3])
    assert _pick(dets, tracked={0: QUAD[0]}, region=region).index == 0
    # front_left tracked one spacing right: the pair is the left one, front_right is away
    moved = {1: (QUAD[1][0], QUAD[1][1], 19.3)}
    assert _pick(dets, tracked={0: moved[1]}, region=region).index is None


def test_a_lone_rotor_takes_the_detection_nearest_its_last_place():
    lone = [(300.0, 200.0, 30.0)]
    dets = [(360.0, 200.0, 30.0), (310.0, 205.0, 31.0), (250.0, 150.0, 29.0)]
    pick = layout_pick(0, dets, lone, (200, 100, 400, 300), {}, (305.0, 199.0, 30.0),
                       lambda j: True, REACH)
    assert pick.index == 1


def test_a_detection_the_rotor_may_not_be_is_not_picked():
    dets = _placed((0, 0))
    pick = layout_pick(FR, dets, QUAD, _region(QUAD[FR], 4.0), {}, QUAD[FR],
                       lambda j: j != 1, REACH)
    assert pick.index is None


def test_no_detection_no_pick():
    assert _pick([]) == (None, None)


def _random_search(rng):
    """A drone of 2-6 rotors spaced 2-3.5 tip radii, the camera's shift, scale and turn
    since its layout (given roughly), the lost rotor's last good place (an older shift),
    the detections of its search region (each rotor in it found, jittered) and TRACKING
    rotors."""
    n = int(rng.integers(2, 7))
    rad = float(rng.uniform(15, 60))
    layout = []
    while len(layout) < n:
        c = rng.uniform(0, 8 * rad, 2) + 300
        if all(math.hypot(c[0] - x, c[1] - y) > 2.0 * rad for x, y, _ in layout):
            layout.append((float(c[0]), float(c[1]), rad * float(rng.uniform(0.95, 1.05))))
    k = float(rng.uniform(0.85, 1.15))
    shift = rng.normal(0, 3 * rad, 2)
    # the drone as the camera sees it now: its layout turned up to 10 degrees about its
    # first rotor, each rotor up to ~0.3 tip radii off the layout given
    turn = math.radians(rng.uniform(-10, 10))
    c, s = math.cos(turn), math.sin(turn)
    x0, y0 = layout[0][:2]
    true = []
    for x, y, lr in layout:
        ex, ey = rng.normal(0, 0.15 * rad, 2)
        tx = x0 + c * (x - x0) - s * (y - y0) + ex
        ty = y0 + s * (x - x0) + c * (y - y0) + ey
        true.append((shift[0] + k * tx, shift[1] + k * ty, k * lr))
    r = int(rng.integers(n))
    old = shift - rng.normal(0, 2 * rad, 2)
    last = (old[0] + k * layout[r][0], old[1] + k * layout[r][1], k * layout[r][2])
    region = _region(last)
    dets, who = [], []
    for i, (x, y, tr) in enumerate(true):
        if region[0] <= x <= region[2] and region[1] <= y <= region[3]:
            j = rng.normal(0, 0.08 * tr, 3)
            dets.append((x + j[0], y + j[1], tr * (1 + 0.3 * j[2] / tr)))
            who.append(i)
    tracked = {i: true[i] for i in range(n) if i != r and rng.random() < 0.3}
    return r, layout, region, tracked, last, dets, who


def _nearest(last, dets):
    if not dets:
        return None
    return min(range(len(dets)), key=lambda j: math.hypot(dets[j][0] - last[0],
                                                          dets[j][1] - last[1]))


@pytest.mark.parametrize('seed', range(3))
@pytest.mark.parametrize('missed', [0.0, 0.3])
def test_random_searches_never_pick_a_neighbour_and_nearest_would(seed, missed):
    # (missed: the share of rotors in the region the detector does not find)
    rng = np.random.default_rng(seed)
    wrong = nearest_wrong = right = 0
    for _ in range(400):
        r, layout, region, tracked, last, dets, who = _random_search(rng)
        found = [j for j in range(len(dets)) if rng.random() >= missed]
        dets, who = [dets[j] for j in found], [who[j] for j in found]
        pick = layout_pick(r, dets, layout, region, tracked, last, lambda j: True, REACH)
        if pick.index is not None:
            wrong += who[pick.index] != r
            right += who[pick.index] == r
        j = _nearest(last, dets)
        nearest_wrong += j is not None and who[j] != r
    assert wrong == 0
    assert nearest_wrong > 20            # the cases the old rule got wrong are there
    assert right > 60                    # and the layout still finds the rotor in many


def test_a_camera_restart_forgets_the_times_of_good_places():
    """Found by the code review: sensor time going back made the time since the last good
    place negative, and the camera's recent motion looked like a tip radius."""
    from types import SimpleNamespace

    from helixtrack_ros.pipeline.recovery import RotorRecovery

    rec = RotorRecovery()
    for i in range(300):
        rec.note_good([math.log(20.0), 0.0, 300.0, 200.0, 0.0, 0.0], 9000.0, 1,
                      4_800_000 + 1000 * i)
    bank = SimpleNamespace(recs=[rec])
    assert rec.prior_reach_px(bank, 5_150_000) < 25
    assert math.isinf(rec.prior_reach_px(bank, 10_000))          # time went back
    rec.new_clock()
    assert math.isinf(rec.prior_reach_px(bank, 5_150_000)) and not rec.places


def test_a_widened_search_holds_its_region_and_counts_only_growth():
    """Found by the code review: a widening from a small region dropped the search region
    around the rotor's place, and an off-image box counted a widening every attempt."""
    from types import SimpleNamespace

    from helixtrack_ros.pipeline.recovery import RotorRecovery

    bank = SimpleNamespace(image_size=lambda: (640, 480), counters={'searches_widened': 0})
    rec = RotorRecovery()
    rec.region = (100, 100, 200, 200)
    rec._widen(bank, (150, 150, 300, 260))
    assert rec.region == (100, 100, 300, 260) and bank.counters['searches_widened'] == 1
    rec._widen(bank, (120, 120, 250, 250))                 # inside already
    rec._widen(bank, (-50, 300, 10, 900))                  # off the image below
    assert rec.region == (0, 100, 300, 479) and bank.counters['searches_widened'] == 2
    rec._widen(bank, (-80, 320, 5, 1000))
    assert bank.counters['searches_widened'] == 2
