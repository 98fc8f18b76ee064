# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""ROS 2 parameter files: one file configures the node and the offline CLI.

The file is a standard ROS 2 parameter file::

    /**:
      ros__parameters:
        rotor_names: [front_left]
        rotors:
          front_left: {center_px: [400.0, 300.0], radius_px: 80.0, rpm: 6000.0, blades: 2}
        tracker: {q_jerk: 400.0}

Nested mappings are flattened with dots, exactly as ROS 2 does
(``rotors.front_left.center_px``).
"""

from pathlib import Path
from typing import Any

import yaml


def flatten(tree: dict[str, Any], prefix: str = '') -> dict[str, Any]:
    """Flatten nested mappings into ROS-style dotted parameter names."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f'{prefix}{key}'
        if isinstance(value, dict):
            flat.update(flatten(value, name + '.'))
        else:
            flat[name] = value
    return flat


def unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    """Turn dotted parameter names back into nested mappings."""
    tree: dict[str, Any] = {}
    for name, value in flat.items():
        node = tree
        parts = name.split('.')
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return tree


def yaml_problem(exc: Exception) -> str:
    """A YAML error in one line: where and what (PyYAML's message spans several)."""
    mark = getattr(exc, 'problem_mark', None)
    problem = getattr(exc, 'problem', None) or ' '.join(str(exc).split())
    if mark is None:
        return problem
    return f'line {mark.line + 1}, column {mark.column + 1}: {problem}'


class UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """The mapping of ``node``; a repeated key is a ConstructorError naming it."""
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:   # an unhashable key: the base class says so
                break
            if repeated:
                raise yaml.constructor.ConstructorError(
                    None, None, f'duplicate key {key!r} (each key once per mapping: a '
                    'later one would replace the earlier silently)', key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def load_yaml_text(text: str) -> Any:
    """The YAML document of ``text``, refusing duplicate keys (:class:`UniqueKeyLoader`)."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a SafeLoader)


def load_ros_params(path: str | Path, node_name: str = 'helixtrack') -> dict[str, Any]:
    """Read a ROS 2 parameter file and return the flat parameters for one node.

    Sections for ``/**``, ``**``, the node name and ``/<node_name>`` are merged
    in that order (later wins), like rcl does for a node without namespace.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        The file is not a ROS 2 parameter file.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f'{path} is a directory, not a parameter file')
    if not path.is_file():
        raise FileNotFoundError(f'parameter file not found: {path}')
    try:
        doc = load_yaml_text(path.read_text(encoding='utf-8'))
    except UnicodeDecodeError as exc:
        raise ValueError(f'{path}: not a text YAML file (byte {exc.object[exc.start]:#04x} at '
                         f'offset {exc.start} is not UTF-8 text)') from None
    except yaml.YAMLError as exc:
        raise ValueError(f'{path}: not valid YAML ({yaml_problem(exc)})') from None
    if not isinstance(doc, dict):
        raise ValueError(f'{path}: expected a mapping of node names to ros__parameters')
    flat: dict[str, Any] = {}
    found = False
    for key in ('/**', '**', node_name, '/' + node_name):
        section = doc.get(key)
        if isinstance(section, dict) and isinstance(section.get('ros__parameters'), dict):
            flat.update(flatten(section['ros__parameters']))
            found = True
    if not found:
        raise ValueError(f'{path}: no "/**: ros__parameters:" (or "{node_name}:") section')
    return flat


def rotor_params_tree(rotors: list[dict[str, Any]]) -> dict[str, Any]:
    """Build the ``rotor_names`` / ``rotors`` part of a parameter tree.

    Parameters
    ----------
    rotors : list of dict
        Each with ``name``, ``center_px``, ``radius_px``, ``rpm``, ``blades``
        and optionally ``direction``, ``psi_rad``, ``perspective``.
    """
    tree: dict[str, Any] = {'rotor_names': [r['name'] for r in rotors], 'rotors': {}}
    for r in rotors:
        entry = {
            'center_px': [float(r['center_px'][0]), float(r['center_px'][1])],
            'radius_px': float(r['radius_px']),
            'rpm': float(r['rpm']),
            'blades': int(r['blades']),
            'direction': int(r.get('direction', 0)),
        }
        if 'psi_rad' in r:
            entry['psi_rad'] = float(r['psi_rad'])
        if 'perspective' in r:
            entry['perspective'] = [float(v) for v in r['perspective']]
        tree['rotors'][r['name']] = entry
    return tree


def write_ros_params(path: str | Path, parameters: dict[str, Any],
                     header: str = '') -> None:
    """Write a nested parameter tree as a ``/**: ros__parameters:`` file."""
    text = yaml.safe_dump({'/**': {'ros__parameters': parameters}}, sort_keys=False,
                          default_flow_style=None)
    comment = ''.join(f'# {line}\n' for line in header.splitlines())
    Path(path).write_text(comment + text)
