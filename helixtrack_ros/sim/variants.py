# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Simulator variants: the same scene with another blade, contrast, sensor or noise model.

Tracker defaults tuned on one simulator can fit that simulator's quirks; a
:class:`SimVariant` changes one aspect of the scene drawn by
:func:`~helixtrack_ros.sim.make_scenario` after every random draw, so a variant
keeps the rotors, their speeds and the camera motion of the plain scene and
``SimVariant()`` gives it bit for bit. :data:`VARIANTS` names the ones
``benchmarks/bench_variants.py`` runs.
"""

from __future__ import annotations

from helixtrack_ros.core.declared import check_fields, declared


@declared('variant_fields.json')
class SimVariant:
    """Changes to a drawn scene (the defaults change nothing).

    The fields (blade chords, tip shape and contrast; sensor mismatch, gains,
    OFF latency and noise) are declared in ``variant_fields.json``
    (:mod:`helixtrack_ros.core.declared`), each with its default, range and
    meaning.
    """

    def __post_init__(self) -> None:
        """Validate; raise ValueError naming the field."""
        check_fields(self, 'SimVariant')
        if self.chord_scale * self.tip_chord_scale == 0.0:
            raise ValueError('SimVariant: blade chords must stay > 0')

    def apply(self, rotors: list, sensor) -> None:
        """Change the rotors (RotorSpec) and the sensor (SensorSpec) in place."""
        for r in rotors:
            r.chord_root *= self.chord_scale
            r.chord_peak *= self.chord_scale
            r.chord_tip *= self.chord_scale * self.tip_chord_scale
            r.tip_round = self.tip_round
            r.contrast *= self.contrast_scale
        sensor.ba_rate_hz *= self.noise_scale
        sensor.pixel_spread = self.pixel_spread
        sensor.on_gain = self.on_gain
        sensor.off_gain = self.off_gain
        sensor.off_delay_us = self.off_delay_us


#: name -> variant: one aspect each, sized like the spread of real propellers and sensors
VARIANTS: dict[str, SimVariant] = {
    'base': SimVariant(),
    'narrow': SimVariant(chord_scale=0.6),
    'wide': SimVariant(chord_scale=1.5),
    'blunt_tip': SimVariant(tip_chord_scale=2.5),
    'round_tip': SimVariant(tip_round=1.0),
    'low_contrast': SimVariant(contrast_scale=0.5),
    'high_contrast': SimVariant(contrast_scale=2.0),
    'pixel_spread': SimVariant(pixel_spread=0.5),
    'on_off': SimVariant(on_gain=1.4, off_gain=0.6, off_delay_us=30.0),
    'noisy': SimVariant(noise_scale=20.0),
}


def variant_of(spec: SimVariant | str | None) -> SimVariant | None:
    """A :class:`SimVariant` from itself, a name of :data:`VARIANTS` or None."""
    if spec is None or isinstance(spec, SimVariant):
        return spec
    if spec not in VARIANTS:
        raise ValueError(f'unknown simulator variant {spec!r}; choose from {sorted(VARIANTS)}')
    return VARIANTS[spec]
