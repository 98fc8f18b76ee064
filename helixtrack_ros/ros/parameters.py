# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The node's parameters: declared from the pipeline's one table, checked by its validator.

The pipeline's parameters come from
:func:`helixtrack_ros.pipeline.config.parameter_table` and
:data:`~helixtrack_ros.pipeline.config.ROTOR_FIELDS`; the node adds its own
(:data:`NODE_PARAMETERS`, :data:`NODE_CHOICES`). Every value, at start-up and
when changed at run time, goes through the same checks the CLI uses. The
pipeline's string parameters (:data:`~helixtrack_ros.pipeline.config.CHOICES`:
``preset``) are declared first: the ``tracker.*`` defaults are the preset's,
so that only the values a parameter file gives override it, as in the CLI.
"""

from __future__ import annotations

import math
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.node import Node

from helixtrack_ros.core.presets import apply_preset
from helixtrack_ros.pipeline.config import (
    CHOICES,
    ROTOR_FIELDS,
    ParamSpec,
    check_choice,
    check_rotor_names,
    check_value,
    coerce_rotor_field,
)
from helixtrack_ros.ros.messages import EVENTS_TYPES

#: Values of the ``executor`` parameter.
EXECUTORS = ('events', 'single_threaded')

#: The node's own numeric parameters (reconfigurable unless in NODE_READ_ONLY).
NODE_PARAMETERS: dict[str, ParamSpec] = {
    'debug_image_hz': ParamSpec(0.0, 'debug image rate, 0 = off', 'Hz', 0.0, 60.0),
    'debug_image_window_ms': ParamSpec(10.0, 'sensor time of events drawn in a debug image',
                                       'ms', 0.1, 1000.0),
    'diagnostics_period_s': ParamSpec(1.0, 'period of /diagnostics', 's', 0.05, 60.0),
    'rotor_topics_hz': ParamSpec(
        100.0, 'rate of ~/<rotor>/rpm and ~/<rotor>/homography per second of sensor time, '
        'and at once on a state change; 0 = with every packet (~/rotors and ~/health always '
        'go with every packet)', 'Hz', 0.0, 100000.0),
    'max_batch_packets': ParamSpec(
        20, 'when packets queue up (processing behind), up to this many are taken and '
        'tracked together: one kernel call per rotor', '', 1, 1000),
}
#: The node's own string parameters: name -> (allowed values, description).
NODE_CHOICES: dict[str, tuple[tuple[str, ...], str]] = {
    'debug_image_encoding': (('mono8', 'rgb8'), 'debug image encoding: mono8 or rgb8'),
    'events_type': (EVENTS_TYPES, 'message type of ~/events: '
                    'event_camera_msgs/EventPacket, event_array_msgs/EventArray (older '
                    'drivers), or auto: the type its publishers use'),
    'executor': (EXECUTORS, 'how callbacks are run: "events" (rclpy.experimental.'
                 'EventsExecutor, Kilted and newer; elsewhere single_threaded) or '
                 '"single_threaded"'),
}
NODE_READ_ONLY = ('diagnostics_period_s', 'executor', 'events_type')

def _descriptor(spec: ParamSpec, read_only: bool) -> ParameterDescriptor:
    """A descriptor with the spec's label and range; dynamic typing so that YAML 400
    for 400.0 is accepted and a wrong type is refused by check_value, readably."""
    desc = ParameterDescriptor(description=spec.label, read_only=read_only,
                               dynamic_typing=True)
    if isinstance(spec.default, bool) or (spec.lo is None and spec.hi is None):
        return desc
    if isinstance(spec.default, int):
        desc.integer_range = [IntegerRange(
            from_value=int(spec.lo) if spec.lo is not None else -(2 ** 31),
            to_value=int(spec.hi) if spec.hi is not None else 2 ** 31 - 1, step=0)]
    else:
        desc.floating_point_range = [FloatingPointRange(
            from_value=float(spec.lo) if spec.lo is not None else -math.inf,
            to_value=float(spec.hi) if spec.hi is not None else math.inf, step=0.0)]
    return desc


class NodeParameters:
    """Declares and checks every parameter of one node."""

    def __init__(self, node: Node, table: dict[str, ParamSpec]) -> None:
        self._node = node
        #: the pipeline's scalar parameters (tracker.* reconfigurable, the rest read only)
        self.table = dict(table)

    def declare(self) -> dict[str, Any]:
        """Declare every parameter; the flat dict of the pipeline's values (ValueError:
        a value is refused, the message names it)."""
        out: dict[str, Any] = {'rotor_names': self._declare_rotors()}
        out.update(self._rotor_values)
        for key, (allowed, text) in CHOICES.items():
            out[key] = self._node.declare_parameter(key, allowed[0], ParameterDescriptor(
                description=text, read_only=True)).value
            self._checked(key, out[key])
        self._preset_defaults(out['preset'])
        for key, spec in self.table.items():
            value = self._node.declare_parameter(
                key, spec.default, _descriptor(spec, not key.startswith('tracker.'))).value
            out[key] = self._checked(key, value)
        for key, spec in NODE_PARAMETERS.items():
            value = self._node.declare_parameter(
                key, spec.default, _descriptor(spec, key in NODE_READ_ONLY)).value
            self._checked(key, value)
        for key, (allowed, text) in NODE_CHOICES.items():
            value = self._node.declare_parameter(key, allowed[0], ParameterDescriptor(
                description=text, read_only=key in NODE_READ_ONLY)).value
            self._checked(key, value)
        return out

    def _preset_defaults(self, preset: str) -> None:
        """Make the tracker.* defaults those of ``preset``."""
        values = apply_preset(preset).to_dict()
        for key, spec in self.table.items():
            name = key[len('tracker.'):]
            if key.startswith('tracker.') and name in values:
                self.table[key] = spec._replace(default=values[name])

    def _declare_rotors(self) -> list[str]:
        """Declare rotor_names and every rotor's fields (read only)."""
        node = self._node
        names = node.declare_parameter('rotor_names', None, ParameterDescriptor(
            description='names of the rotors to track; each one needs '
            'rotors.<name>.{center_px, radius_px, rpm}', read_only=True,
            dynamic_typing=True)).value or []
        names = check_rotor_names(names)
        self._rotor_values: dict[str, Any] = {}
        for name in names:
            for field, (default, text) in ROTOR_FIELDS.items():
                key = f'rotors.{name}.{field}'
                value = node.declare_parameter(key, default, ParameterDescriptor(
                    description=text, read_only=True, dynamic_typing=True)).value
                if value is None:
                    if default is None:
                        raise ValueError(f'parameter {key} is missing for rotor "{name}"')
                    value = default
                self._rotor_values[key] = coerce_rotor_field(key, value)
        return list(names)

    def _checked(self, key: str, value: Any) -> Any:
        reason = self.reason(key, value)
        if reason:
            raise ValueError(f'parameter {key}: {reason}')
        spec = self.table.get(key)
        return float(value) if spec is not None and type(spec.default) is float else value

    def reason(self, key: str, value: Any) -> str | None:
        """Why ``value`` is refused for parameter ``key`` (None: accepted or not ours)."""
        if key in CHOICES:
            return check_choice(key, value)
        if key in NODE_CHOICES:
            allowed = NODE_CHOICES[key][0]
            if value not in allowed:
                return f'must be {" or ".join(repr(a) for a in allowed)}, not {value!r}'
            return None
        spec = self.table.get(key) or NODE_PARAMETERS.get(key)
        return check_value(spec, value) if spec is not None else None

    def tracker_changes(self, params: list[Any]) -> tuple[dict[str, Any], str | None]:
        """The tracker.* changes of a set-parameters request, or why it is refused."""
        changes: dict[str, Any] = {}
        for p in params:
            reason = self.reason(p.name, p.value)
            if reason:
                return {}, f'{p.name}: {reason}'
            if p.name.startswith('tracker.') and p.name in self.table:
                changes[p.name[len('tracker.'):]] = self._checked(p.name, p.value)
        return changes, None

    def unused_overrides(self, overrides: dict[str, Any]) -> list[str]:
        """Parameters given on the command line or in a file that the node does not have."""
        return sorted(k for k in overrides
                      if not self._node.has_parameter(k) and not k.startswith('qos_overrides.')
                      and k not in ('use_sim_time', 'start_type_description_service'))
