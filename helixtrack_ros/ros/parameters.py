# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The node's parameters: declared from the pipeline's one table, checked by its validator.

The pipeline's parameters come from
:func:`helixtrack_ros.pipeline.config.parameter_table` and
:data:`~helixtrack_ros.pipeline.config.ROTOR_FIELDS`; the node adds its own
(:mod:`helixtrack_ros.node_parameters`). Every value, at start-up and when
changed at run time, goes through the same checks the CLI uses. The
pipeline's string parameters (:data:`~helixtrack_ros.pipeline.config.CHOICES`:
``preset``) are declared first: the ``tracker.*`` defaults are the preset's,
so that only the values a parameter file gives override it, as in the CLI.
"""

from __future__ import annotations

import math
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.node import Node
from rclpy.parameter import Parameter

from helixtrack_ros.core.presets import apply_preset
from helixtrack_ros.node_parameters import NODE_CHOICES, NODE_PARAMETERS, NODE_READ_ONLY
from helixtrack_ros.pipeline.config import (
    CHOICES,
    ROTOR_FIELDS,
    ParamSpec,
    check_choice,
    check_rotor_names,
    check_value,
    coerce_rotor_field,
)
from helixtrack_ros.ros.overrides import Dropped, value_text


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


def exact_double(value: Any) -> Any:
    """An integer as the double of the same value where there is one; else ``value``."""
    if isinstance(value, int) and not isinstance(value, bool) and int(float(value)) == value:
        return float(value)
    return value


class NodeParameters:
    """Declares and checks every parameter of one node.

    A double parameter stays a double: an integer for it (a parameter file's
    ``400``, ``ros2 param set ... 250``) becomes the double of the same value
    (:meth:`pre_set`), or is refused when it has none. A command-line value
    rcl dropped (:mod:`helixtrack_ros.ros.overrides`) is used when the
    parameter takes it, else said in one warning line.
    """

    def __init__(self, node: Node, table: dict[str, ParamSpec]) -> None:
        self._node = node
        #: the pipeline's scalar parameters (tracker.* reconfigurable, the rest read only)
        self.table = dict(table)
        #: the double parameters
        self.doubles = frozenset(k for k, s in {**self.table, **NODE_PARAMETERS}.items()
                                 if type(s.default) is float)
        self._overrides: dict[str, Any] = {}
        self._dropped: dict[str, Dropped] = {}

    def declare(self, dropped: dict[str, Dropped] | None = None) -> dict[str, Any]:
        """Declare every parameter; the flat dict of the pipeline's values (ValueError:
        a value is refused, the message names it). ``dropped``: the command-line values
        rcl dropped (:func:`~helixtrack_ros.ros.overrides.dropped_values`)."""
        overrides = getattr(self._node, '_parameter_overrides', None) or {}
        self._overrides = {k: p.value for k, p in overrides.items()}
        self._dropped = dict(dropped or {})
        out: dict[str, Any] = {'rotor_names': self._declare_rotors()}
        out.update(self._rotor_values)
        for key, (allowed, text) in CHOICES.items():
            out[key] = self._declare(key, allowed[0], ParameterDescriptor(
                description=text, read_only=True))
            self._checked(key, out[key])
        self._preset_defaults(out['preset'])
        for key, spec in self.table.items():
            value = self._declare(key, spec.default,
                                  _descriptor(spec, not key.startswith('tracker.')))
            out[key] = self._checked(key, value)
        for key, spec in NODE_PARAMETERS.items():
            value = self._declare(key, spec.default, _descriptor(spec, key in NODE_READ_ONLY))
            self._checked(key, value)
        for key, (allowed, text) in NODE_CHOICES.items():
            value = self._declare(key, allowed[0], ParameterDescriptor(
                description=text, read_only=key in NODE_READ_ONLY))
            self._checked(key, value)
        self._say_dropped_elsewhere()
        return out

    def _declare(self, key: str, default: Any, descriptor: ParameterDescriptor) -> Any:
        """Declare one parameter with its command-line value (the one rcl dropped where the
        parameter takes it; an integer as a double for a double parameter); its value."""
        value = self._overrides.get(key, default)
        drop = self._dropped.pop(key, None)
        if drop is not None:
            value = self._settle(drop, value)
        if key in self.doubles:
            value = exact_double(value)
        return self._node.declare_parameter(key, value, descriptor, ignore_override=True).value

    def _settle(self, drop: Dropped, value: Any) -> Any:
        """The value of a parameter whose command-line value rcl dropped: that value where
        the parameter takes it (said), else ``value`` (said, with why)."""
        key, log = drop.name, self._node.get_logger()
        given = exact_double(drop.given.value) if key in self.doubles else drop.given.value
        why = self.refusal(key, given)
        if why is None:
            log.info(f'parameter {key}: using {value_text(given)} from {drop.given.source} '
                     f'(rcl kept {value_text(drop.used.value)} from {drop.used.source}, of '
                     'another type)')
            return given
        log.warning(f'parameter {key}: {drop.given.source} is not used ({why}; rcl kept '
                    f'{value_text(drop.used.value)} from {drop.used.source}): using '
                    f'{value_text(drop.used.value)}')
        return value

    def _say_dropped_elsewhere(self) -> None:
        """One line for each dropped value of a parameter declared elsewhere (rclpy's own,
        a QoS override): it is the value rcl kept that is used."""
        for key, drop in sorted(self._dropped.items()):
            if self._node.has_parameter(key) or key.startswith('qos_overrides.'):
                self._node.get_logger().warning(
                    f'parameter {key}: {drop.given.source} is not used (rcl kept '
                    f'{value_text(drop.used.value)} from {drop.used.source}, of another type): '
                    f'using {value_text(drop.used.value)}')
        self._dropped.clear()

    def refusal(self, key: str, value: Any) -> str | None:
        """Why parameter ``key`` cannot start with ``value`` (None: it can)."""
        try:
            if key == 'rotor_names':
                check_rotor_names(value)
            elif key.startswith('rotors.') and key.rsplit('.', 1)[-1] in ROTOR_FIELDS:
                coerce_rotor_field(key, value)
            else:
                return self.reason(key, value)
        except ValueError as exc:
            return str(exc)
        return None

    def _preset_defaults(self, preset: str) -> None:
        """Make the tracker.* defaults those of ``preset``."""
        values = apply_preset(preset).to_dict()
        for key, spec in self.table.items():
            name = key[len('tracker.'):]
            if key.startswith('tracker.') and name in values:
                self.table[key] = spec._replace(default=values[name])

    def _declare_rotors(self) -> list[str]:
        """Declare rotor_names and every rotor's fields (read only)."""
        names = self._declare('rotor_names', None, ParameterDescriptor(
            description='names of the rotors to track; each one needs '
            'rotors.<name>.{center_px, radius_px, rpm}', read_only=True,
            dynamic_typing=True)) or []
        names = check_rotor_names(names)
        self._rotor_values: dict[str, Any] = {}
        for name in names:
            for field, (default, text) in ROTOR_FIELDS.items():
                key = f'rotors.{name}.{field}'
                value = self._declare(key, default, ParameterDescriptor(
                    description=text, read_only=True, dynamic_typing=True))
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

    def pre_set(self, params: list[Parameter]) -> list[Parameter]:
        """A set-parameters request with each integer for a double parameter as the double
        of the same value (rclpy's pre-set callback, before its type and range checks:
        with dynamic typing the integer made the parameter an integer one)."""
        return [Parameter(p.name, value=exact_double(p.value))
                if p.name in self.doubles and p.type_ == Parameter.Type.INTEGER else p
                for p in params]

    def runtime_reason(self, key: str, value: Any) -> str | None:
        """Why ``value`` is refused for ``key`` at run time (None: accepted or not ours):
        :meth:`reason`, and a double parameter takes doubles only."""
        if key in self.doubles and isinstance(value, int) and not isinstance(value, bool):
            if exact_double(value) is value:
                return f'must be a double: {value} has no exact double value'
            return f'must be a double, not the integer {value} (give {value}.0)'
        return self.reason(key, value)

    def tracker_changes(self, params: list[Any]) -> tuple[dict[str, Any], str | None]:
        """The tracker.* changes of a set-parameters request, or why it is refused."""
        changes: dict[str, Any] = {}
        for p in params:
            reason = self.runtime_reason(p.name, p.value)
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
