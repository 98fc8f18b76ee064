# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The command line's parameter values that rcl drops without a word.

rcl keeps one value per parameter and node section (``/**``, ``helixtrack``,
...), with one field per type; ``--params-file`` and ``-p NAME:=VALUE`` fill
them in command-line order. A value of another type than the one before it
fills its own field and leaves the other standing, and rclpy reads the
fields in a fixed order (true/false, integer, double, string, then the
arrays), so the value given last is dropped whenever its type comes later:
``q_jerk: 400`` in the file with ``-p tracker.q_jerk:=250.5`` after it runs
with 400 (live-node review). :func:`dropped_values` finds such values by
reading the command line as rcl does (its YAML typing: ``get_value`` in
``rcl_yaml_param_parser``) and comparing with what rclpy gave the node.
"""

from __future__ import annotations

from collections.abc import Iterator
import math
import re
from typing import Any, NamedTuple

import yaml

#: rcl's words for true and false (plain YAML scalars only)
_TRUE = ('Y', 'y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON')
_FALSE = ('N', 'n', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF')
#: what C's strtol(value, &end, 0) reads whole (decimal, 0x hex, 0 octal)
_INT = re.compile(r'\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)')
#: what C's strtod reads whole, besides YAML's .inf / .nan
_DOUBLE = re.compile(r'\s*[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf(inity)?|nan)',
                     re.IGNORECASE)
_HEX_DOUBLE = re.compile(r'\s*[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)'
                         r'([pP][+-]?\d+)?')
_YAML_SPECIAL = {'.nan': math.nan, '.NaN': math.nan, '.NAN': math.nan}
for _sign, _v in (('', math.inf), ('+', math.inf), ('-', -math.inf)):
    _YAML_SPECIAL.update({f'{_sign}.inf': _v, f'{_sign}.Inf': _v, f'{_sign}.INF': _v})

#: A section that addresses every node (where ``-p NAME:=VALUE`` goes).
ALL_NODES = '/**'


class Given(NamedTuple):
    """One value a command line gives a parameter, and where (``-p ...`` or a file)."""

    value: Any
    source: str


class Dropped(NamedTuple):
    """A parameter whose value given last rcl dropped for an earlier one of another type."""

    name: str
    given: Given
    used: Given


def rcl_scalar(text: str, quoted: bool = False) -> Any:
    """A YAML scalar as rcl types it: quoted -> text; else true/false words, a whole C
    ``long``, a whole C ``double`` (not an overflowing one), else text."""
    if quoted:
        return text
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    m = _INT.fullmatch(text)
    if m:
        digits = m.group(2)
        base = 16 if digits[:2] in ('0x', '0X') else 8 if digits[0] == '0' else 10
        value = int(digits, base) * (-1 if m.group(1) == '-' else 1)
        if -2 ** 63 <= value < 2 ** 63:
            return value
    if text in _YAML_SPECIAL:
        return _YAML_SPECIAL[text]
    if _DOUBLE.fullmatch(text):
        value = float(text)
        if math.isfinite(value) or not re.search(r'\d', text):   # (not an overflow)
            return value
    elif _HEX_DOUBLE.fullmatch(text):
        return float.fromhex(text.strip())
    return text


def _value(node: yaml.Node) -> Any:
    """rcl's value of a YAML node: a scalar, or a list of scalars of one type (None:
    anything else, which rcl refuses or is not a value)."""
    if isinstance(node, yaml.ScalarNode):
        return rcl_scalar(node.value, node.style in ('"', "'"))
    if isinstance(node, yaml.SequenceNode) and node.value:
        items = [_value(n) if isinstance(n, yaml.ScalarNode) else None for n in node.value]
        kinds = {kind(v) for v in items}
        return items if len(kinds) == 1 and None not in kinds else None
    return None


def kind(value: Any) -> int | None:
    """The field rcl stores ``value`` in, numbered in the order rclpy reads them."""
    if isinstance(value, list):
        inner = kind(value[0]) if value else None
        return None if inner is None else 5 + inner
    for k, t in enumerate((bool, int, float, str)):
        if isinstance(value, t):
            return k
    return None


def same(a: Any, b: Any) -> bool:
    """Whether two parameter values are equal and of one type (NaN equal to NaN)."""
    if kind(a) != kind(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def section_names_node(key: str, fqn: str) -> bool:
    """Whether a parameter file's top-level key (``/**``, ``/ns/name``, ``name``, with
    ``*`` for one name and ``**`` for any namespace) addresses the node named ``fqn``."""
    want = [t for t in fqn.split('/') if t]
    pattern = [t for t in key.split('/') if t]
    if len(pattern) == 1 and pattern[0] not in ('*', '**'):
        return pattern[0] == want[-1]          # a bare node name, in any namespace

    def match(p: list[str], w: list[str]) -> bool:
        if not p:
            return not w
        if p[0] == '**':
            return any(match(p[1:], w[k:]) for k in range(len(w) + 1))
        return bool(w) and (p[0] in ('*', w[0])) and match(p[1:], w[1:])
    return match(pattern, want)


def ros_arguments(argv: list[str]) -> Iterator[tuple[str, str]]:
    """``('param', 'NAME:=VALUE')`` and ``('file', PATH)`` of a command line's
    ``--ros-args`` blocks, in order."""
    in_ros, i = False, 0
    while i < len(argv):
        arg = argv[i]
        if arg in ('--ros-args', '--'):
            in_ros = arg == '--ros-args'
        elif in_ros and i + 1 < len(argv) and arg in ('-p', '--param', '--params-file'):
            yield ('file' if arg == '--params-file' else 'param'), argv[i + 1]
            i += 1
        i += 1


def _param_rule(rule: str) -> tuple[str, str, Any] | None:
    """(section, name, value) of a ``[NODE:]NAME:=VALUE`` rule (None: not one)."""
    lhs, sep, text = rule.partition(':=')
    if not sep or not lhs:
        return None
    section, _, name = lhs.rpartition(':')
    try:
        value = _value(yaml.compose(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return None
    return section or ALL_NODES, name, value


def _file_entries(path: str, fqn: str) -> Iterator[tuple[str, str, Any]]:
    """(section, name, value) of every parameter a file gives the node named ``fqn``."""
    try:
        with open(path, encoding='utf-8') as fh:
            root = yaml.compose(fh, Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return                    # (refused before the start: main.params_file_problem)
    if not isinstance(root, yaml.MappingNode):
        return
    for key, body in root.value:
        if not (isinstance(key, yaml.ScalarNode) and section_names_node(key.value, fqn)
                and isinstance(body, yaml.MappingNode)):
            continue
        for k, params in body.value:
            if k.value == 'ros__parameters' and isinstance(params, yaml.MappingNode):
                yield from ((key.value, n, v) for n, v in _flatten(params, ''))


def _flatten(node: yaml.MappingNode, prefix: str) -> Iterator[tuple[str, Any]]:
    for key, value in node.value:
        name = f'{prefix}{key.value}'
        if isinstance(value, yaml.MappingNode):
            yield from _flatten(value, name + '.')
        else:
            yield name, _value(value)


def given_values(argv: list[str], fqn: str) -> dict[tuple[str, str], list[Given]]:
    """Every value a command line gives the node named ``fqn``, in order, per (section,
    parameter): rcl keeps each section's values of a parameter in one struct."""
    out: dict[tuple[str, str], list[Given]] = {}
    for what, arg in ros_arguments(argv):
        if what == 'file':
            entries = [(s, n, v, arg) for s, n, v in _file_entries(arg, fqn)]
        else:
            rule = _param_rule(arg)
            entries = ([(*rule, f'-p {arg}')] if rule is not None
                       and section_names_node(rule[0], fqn) else [])
        for section, name, value, source in entries:
            if kind(value) is not None:
                out.setdefault((section, name), []).append(Given(value, source))
    return out


def rcl_choice(values: list[Given]) -> Given:
    """The value rclpy gets of those given one parameter in one section: the last of
    each type is kept, and the first type in rclpy's order is read."""
    last: dict[int, Given] = {}
    for g in values:
        last[kind(g.value)] = g
    return last[min(last)]


def dropped_values(command_lines: list[list[str]], fqn: str,
                   overrides: dict[str, Any]) -> dict[str, Dropped]:
    """The parameters whose value given last on a command line rcl dropped.

    ``command_lines``: the global arguments and the node's own (rcl reads each
    apart); ``overrides``: parameter name -> the value rclpy gave the node.
    A parameter is reported when a section's values, read as rcl does, give
    exactly the value the node got, and the value given last is another one.
    """
    out: dict[str, Dropped] = {}
    for argv in command_lines:
        for (_, name), values in given_values(argv, fqn).items():
            if name not in overrides:
                continue
            used, last = rcl_choice(values), values[-1]
            if same(used.value, overrides[name]) and not same(last.value, used.value):
                out[name] = Dropped(name, last, used)
            elif name in out and same(last.value, overrides[name]):
                del out[name]     # (the node's own arguments replace the global ones)
    return out


def dropped_for_node(node: Any, command_line: list[str],
                     kwargs: dict[str, Any]) -> dict[str, Dropped]:
    """:func:`dropped_values` of an rclpy node made with ``kwargs`` in a process started
    with ``command_line``: its global arguments (unless it ignores them), its own
    ``cli_args``, and the overrides rclpy gave it that no ``parameter_overrides`` set."""
    lines = [] if kwargs.get('use_global_arguments') is False else [list(command_line)]
    lines.append(list(kwargs.get('cli_args') or []))
    given = {p.name for p in kwargs.get('parameter_overrides') or []}
    overrides = {k: p.value for k, p in
                 (getattr(node, '_parameter_overrides', None) or {}).items() if k not in given}
    return dropped_values(lines, node.get_fully_qualified_name(), overrides)


def value_text(value: Any) -> str:
    """A parameter value as on a command line (true, 250.5, 'paper', [1.0, 2.0])."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, list):
        return '[' + ', '.join(value_text(v) for v in value) + ']'
    return repr(value) if isinstance(value, str) else str(value)
