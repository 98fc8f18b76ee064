# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Settings classes whose fields are declared by a JSON table next to their module.

The table is the one definition of each setting: its default (an integer
default makes an integer field), its valid range (``min`` / ``max``, absent
= unbounded), its unit and its meaning. The frozen dataclass, the type and
range checks, :func:`describe` (ROS parameter descriptors, docs) all read
it, the way ROS's generate_parameter_library reads a YAML declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from importlib import resources
import json
import math
from typing import Any

#: name -> (description, unit, min, max) of a declared field
Description = tuple[str, str, 'float | None', 'float | None']


def declared(table: str) -> Callable[[type], type]:
    """Class decorator: a frozen dataclass with one field per entry of the JSON ``table``.

    ``table`` lies in the package of the class's module. The class body holds
    the methods and the docstring only; the fields come in the table's
    order, each with ``range``, ``unit``, ``description`` and ``group``
    metadata.
    """
    def make(cls: type) -> type:
        cls.__annotations__ = {}
        for name, entry in read_table(table, cls.__module__.rpartition('.')[0]).items():
            default = entry['default']
            cls.__annotations__[name] = int if type(default) is int else float
            setattr(cls, name, field(default=default, metadata={
                'range': (entry.get('min'), entry.get('max')), 'unit': entry.get('unit', ''),
                'description': entry['description'], 'group': entry.get('group', '')}))
        return dataclass(frozen=True)(cls)
    return make


def read_table(name: str, package: str = __package__) -> Any:
    """The JSON table ``name`` of ``package`` (a declaration or another fixed table)."""
    return json.loads(resources.files(package).joinpath(name).read_text(encoding='utf-8'))


def is_int(f: Field) -> bool:
    """True for an integer field."""
    return f.type in ('int', int)


def check_fields(obj: Any, label: str) -> None:
    """Coerce every field to its type and check its range; ValueError names ``label`` and field.

    A bool or non-number is refused; an integer field takes integral floats.
    """
    for f in fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f'{label} {f.name} must be a number, got {value!r}')
        if is_int(f):
            if float(value) != int(value):
                raise ValueError(f'{label} {f.name} must be an integer, got {value!r}')
            object.__setattr__(obj, f.name, int(value))
        else:
            object.__setattr__(obj, f.name, float(value))
        value = getattr(obj, f.name)
        if not math.isfinite(value):
            raise ValueError(f'{label} {f.name} must be finite, got {value!r}')
        lo, hi = f.metadata['range']
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ValueError(f'{label} {f.name}={value!r} {_range_text(lo, hi)}')


def _range_text(lo: float | None, hi: float | None) -> str:
    """'is outside [lo, hi]', or the one bound a half-open range has."""
    if lo is not None and hi is not None:
        return f'is outside [{lo}, {hi}]'
    return f'must be >= {lo}' if lo is not None else f'must be <= {hi}'


def description(f: Field) -> Description:
    """(description, unit, min, max) of a declared field."""
    lo, hi = f.metadata['range']
    return f.metadata['description'], f.metadata['unit'], lo, hi


def describe(cls: type) -> dict[str, Description]:
    """Every declared field of ``cls``: name -> (description, unit, min, max)."""
    return {f.name: description(f) for f in fields(cls)}
