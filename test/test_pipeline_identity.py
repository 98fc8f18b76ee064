# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The tests of which rotor a tracker sits on (pipeline/identity.py) against a naive twin.

The twin is the direct reading of the module docstring: every rotor's
place drawn in the image as each other TRACKING rotor sees it, distances
measured there. The module measures in the layout's frame instead (the
same test divided by the image scale); both must decide alike on random
drones, cameras and trackers, including trackers sitting on a neighbour.
"""

import math

import numpy as np
import pytest

from helixtrack_ros.pipeline import identity as I  # noqa: N812


def _twin_on_a_place(r, c, places):
    own = places[r]
    if math.hypot(c[0] - own[0], c[1] - own[1]) <= I.OWN_AWAY * own[2]:
        return False
    return any(o != r and math.hypot(c[0] - x, c[1] - y) < I.PLACE_NEAR * rad
               for o, (x, y, rad) in enumerate(places))


def _twin_off_the_layout(r, c, tracked, layout):
    refs = [o for o in tracked if o != r]
    for o in refs:
        co, lo = tracked[o], layout[o]
        k = co[2] / lo[2]

        def place(i, co=co, lo=lo, k=k):
            return co[0] + k * (layout[i][0] - lo[0]), co[1] + k * (layout[i][1] - lo[1])

        x, y = place(r)
        if math.hypot(c[0] - x, c[1] - y) <= I.OWN_AWAY * k * layout[r][2]:
            return False
        if not any(i != r and math.hypot(c[0] - place(i)[0], c[1] - place(i)[1])
                   < I.LAYOUT_NEAR * k * layout[i][2] for i in range(len(layout))):
            return False
    return bool(refs)


def _drone(rng):
    """A layout of 2-6 rotors, the camera's view of it (scale, shift), and trackers:
    each on its own place (jittered), on another rotor's place, or anywhere."""
    n = int(rng.integers(2, 7))
    layout = [(float(rng.uniform(100, 1100)), float(rng.uniform(100, 600)),
               float(rng.uniform(20, 120))) for _ in range(n)]
    k, dx, dy = rng.uniform(0.5, 2.0), rng.uniform(-200, 200), rng.uniform(-200, 200)
    tracked = {}
    for r in range(n):
        if rng.random() < 0.25:
            continue                                  # not TRACKING
        kind = rng.random()
        src = layout[int(rng.integers(n))] if kind < 0.4 else layout[r]
        jitter = rng.normal(0, 0.4 * src[2], 2) if kind < 0.9 else rng.normal(0, 400, 2)
        tracked[r] = (dx + k * src[0] + k * jitter[0], dy + k * src[1] + k * jitter[1],
                      k * layout[r][2] * rng.uniform(0.8, 1.2))
    places = [(dx + k * x + rng.normal(0, 5), dy + k * y + rng.normal(0, 5), k * rad)
              for x, y, rad in layout]
    return layout, places, tracked


@pytest.mark.parametrize('seed', range(5))
def test_the_identity_tests_decide_as_their_naive_twin(seed):
    rng = np.random.default_rng(seed)
    decided = {True: 0, False: 0}
    for _ in range(400):
        layout, places, tracked = _drone(rng)
        for r, c in tracked.items():
            place = I._on_a_place(r, c, places)
            assert place == _twin_on_a_place(r, c, places)
            off = I._off_the_layout(r, c, tracked, layout)
            assert off == _twin_off_the_layout(r, c, tracked, layout)
            decided[place or off] += 1
    assert decided[True] > 50 and decided[False] > 50       # both outcomes exercised


@pytest.mark.parametrize('seed', range(3))
def test_the_packet_test_hits_what_the_two_tests_hit_at_their_distance(seed):
    """_on_another_rotor (per packet) takes the places test's first step inline: it must
    hit exactly the trackers that either test hits, NaN discs and radii included, each at
    its distance from its own place in its tip radii."""
    rng = np.random.default_rng(100 + seed)
    hits = 0
    for _ in range(400):
        layout, places, tracked = _drone(rng)
        if tracked and rng.random() < 0.1:
            r = next(iter(tracked))
            tracked[r] = (math.nan, tracked[r][1], tracked[r][2])
        if rng.random() < 0.1:
            places[0] = (places[0][0], places[0][1], math.nan)
        want = [(r, math.hypot(c[0] - places[r][0], c[1] - places[r][1]) / places[r][2])
                for r, c in tracked.items()
                if _twin_on_a_place(r, c, places) or _twin_off_the_layout(r, c, tracked, layout)]
        got = I._on_another_rotor(tracked, places, layout)
        assert [r for r, _ in got] == [r for r, _ in want]
        assert all(a == b or (math.isnan(a) and math.isnan(b))
                   for (_, a), (_, b) in zip(got, want))
        hits += len(got)
    assert hits > 20


def test_a_degenerate_tracked_disc_is_never_off_the_layout():
    layout = [(100.0, 100.0, 50.0), (400.0, 100.0, 50.0)]
    for rad in (0.0, math.nan):
        tracked = {0: (400.0, 100.0, 50.0), 1: (400.0, 100.0, rad)}
        assert I._off_the_layout(0, tracked[0], tracked, layout) is False


def test_the_disc_of_an_output_is_its_homography_centre_and_tip_radius():
    class Out:
        homography = np.array([[30.0, -40.0, 640.0], [40.0, 30.0, 360.0], [0.0, 0.0, 2.0]])
    x, y, rad = I._disc(Out())
    assert (x, y, rad) == (320.0, 180.0, 25.0)
    Out.homography = Out.homography.tolist()
    assert I._disc(Out()) == (320.0, 180.0, 25.0)


def test_the_disc_of_a_paper_q_is_that_of_its_homography_bit_for_bit():
    """The batch's identity pre-check takes discs from the kernel rows without making each
    homography; phase 2 takes them from the outputs' homographies: the same numbers, or
    the two could disagree on a withheld packet."""
    from helixtrack_ros.core.homography import disc_from_paper_q, homography_from_paper_q
    rng = np.random.default_rng(5)
    for _ in range(2000):
        s, psi = rng.uniform(1.0, 400.0), rng.uniform(-4.0, 4.0)
        tx, ty = rng.uniform(-50.0, 1400.0, 2)
        p31, p32 = rng.normal(0.0, 1e-3, 2)
        H = homography_from_paper_q(s, psi, tx, ty, p31, p32)
        assert disc_from_paper_q(s, psi, tx, ty) == I.disc_of(H)
