# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Reports of ``bench_presets.py``: results/presets.md and docs/DEVIATIONS.md.

Both are written from the JSON rows of the benchmark and, for the
deviations, from ``helixtrack_ros.core.presets.DEVIATIONS`` (the one
definition of the rows' text).
"""

from __future__ import annotations

import json
import math
import platform

from helixtrack_ros.core.presets import DEVIATIONS, PAPER_CHOICES, PRESETS, deviation_off

#: the paper's Table 1 order of the propellers
PROPELLERS = ('rear_right', 'rear_left', 'front_left', 'front_right')
#: a rotor with a larger shaft-RPM MArE [%] counts as lost
LOST_PCT = 5.0
QUAD = ('quadcopter_2m', 'quadcopter_4m')


def load(path: str) -> list[dict]:
    """The JSON rows (the last row wins for a repeated scene / config / rotor)."""
    rows: dict[tuple, dict] = {}
    with open(path) as fh:
        for line in fh:
            r = json.loads(line)
            rows[(r['scene'], r['level'], r['config'], r['rotor'])] = r
    return list(rows.values())


def _md(text: str) -> str:
    """Text for a markdown table cell."""
    return text.replace('|', '\\|')


def _num(v: float) -> float:
    return v if v is not None and math.isfinite(v) else math.inf


def fmt_mare(v: float) -> str:
    """MArE [%], marked (lost) above LOST_PCT."""
    v = _num(v)
    if v > LOST_PCT:
        return f'{v:.0f} (lost)' if math.isfinite(v) else 'nan (lost)'
    return f'{v:.3f}'


def fmt(v: float, digits: int = 1) -> str:
    """A number, or nan."""
    v = _num(v)
    return f'{v:.{digits}f}' if math.isfinite(v) else 'nan'


def worst(rows: list[dict], config: str, scenes: tuple[str, ...],
          levels: set[int] | None = None) -> tuple[float, float, int, int]:
    """(worst MArE, worst max scale error, rotors lost, rotors) of a config on scenes."""
    sel = [r for r in rows if r['config'] == config and r['scene'] in scenes
           and (levels is None or r['level'] in levels)]
    if not sel:
        return math.nan, math.nan, 0, 0
    mare = max(_num(r['mare']) for r in sel)
    scale = max(_num(r['scale_max']) for r in sel)
    lost = sum(_num(r['mare']) > LOST_PCT for r in sel)
    return mare, scale, lost, len(sel)


def _cell(rows: list[dict], scene: str, level: int, config: str, rotor: str) -> dict | None:
    for r in rows:
        if (r['scene'], r['level'], r['config'], r['rotor']) == (scene, level, config, rotor):
            return r
    return None


def table1(rows: list[dict], presets: tuple[str, ...]) -> list[str]:
    """The paper's Table 1 layout: d, M_ego, propeller; MArE, MAE, RMSE, scale per preset."""
    head = ' | '.join(f'{m} {p}' for m in ('MArE [%]', 'MAE [RPM]', 'RMSE [RPM]',
                                            'max scale err [%]') for p in presets)
    lines = [f'| d | M_ego | propeller | {head} |', '|---' * (3 + 4 * len(presets)) + '|']
    for scene in QUAD + ('low_rpm', 'low_rpm_shake'):
        levels = sorted({r['level'] for r in rows if r['scene'] == scene})
        d = scene.split('_')[-1].replace('m', ' m') if scene in QUAD else scene
        for level in levels:
            rotors = [p for p in PROPELLERS if _cell(rows, scene, level, presets[0], p)]
            rotors = rotors or sorted({r['rotor'] for r in rows if r['scene'] == scene})
            for rotor in rotors:
                cells = [_cell(rows, scene, level, p, rotor) or {} for p in presets]
                vals = ([fmt_mare(c.get('mare', math.nan)) for c in cells]
                        + [fmt(c.get('mae', math.nan)) for c in cells]
                        + [fmt(c.get('rmse', math.nan)) for c in cells]
                        + [fmt(c.get('scale_max', math.nan)) for c in cells])
                lines.append(f'| {d} | {level} | {rotor.replace("_", " ")} | '
                             + ' | '.join(vals) + ' |')
    return lines


def _meta(rows: list[dict], command: str) -> str:
    r = rows[0]
    return (f'Machine: {platform.processor() or platform.machine()}, Python '
            f'{platform.python_version()}; command: `{command}`; {r["duration"]} s scenes, '
            f'seed {r["seed"]}, correct initialisation, bare trackers '
            '(evaluation.track_scene), shaft-RPM errors after 0.2 s; "(lost)": MArE > '
            f'{LOST_PCT:g} %.')


def presets_md(rows: list[dict], command: str) -> list[str]:
    """benchmarks/results/presets.md."""
    presets = tuple(PRESETS)
    lines = ['# Presets paper / release / default', '', _meta(rows, command), '',
             'Summary (worst rotor over the scenes, rotors lost / rotors):', '',
             '| scenes | ' + ' | '.join(presets) + ' |', '|---' * (1 + len(presets)) + '|']
    for label, scenes in (('quadcopter 2 m / 4 m', QUAD),
                          ('low_rpm, low_rpm_shake', ('low_rpm', 'low_rpm_shake'))):
        cells = []
        for p in presets:
            m, s, lost, n = worst(rows, p, scenes)
            cells.append(f'MArE {fmt_mare(m)}, scale {fmt(s)} %, {lost}/{n} lost')
        lines.append(f'| {label} | ' + ' | '.join(cells) + ' |')
    return lines + ['', *table1(rows, presets)]


def _effect(rows: list[dict], config: str, scenes: tuple[str, ...], levels: set[int] | None,
            base: str = 'default') -> str:
    """'base -> config': worst MArE / worst scale error over the rotors that ``base``
    tracks (MArE <= LOST_PCT), and rotors lost of all; on the scenes, levels and rotors
    where ``config`` was run."""
    key = ('scene', 'level', 'rotor')
    ran = {tuple(r[k] for k in key) for r in rows if r['config'] == config
           and r['scene'] in scenes and (levels is None or r['level'] in levels)}
    rows = [r for r in rows if tuple(r[k] for k in key) in ran]
    _, _, l1, _ = worst(rows, base, scenes, levels)
    m0, s0, l0, n0 = worst(rows, config, scenes, levels)
    if not n0:
        return 'not run'
    kept = {tuple(r[k] for k in key) for r in rows if r['config'] == base
            and r['scene'] in scenes and (levels is None or r['level'] in levels)
            and _num(r['mare']) <= LOST_PCT}
    sub = [r for r in rows if tuple(r[k] for k in key) in kept]
    m1, s1, _, _ = worst(sub, base, scenes, levels)
    m0, s0, _, _ = worst(sub, config, scenes, levels)
    return (f'{fmt_mare(m1)} -> {fmt_mare(m0)}; {fmt(s1)} -> {fmt(s0)} %; lost {l1} -> '
            f'{l0} of {n0}')


def deviations_md(rows: list[dict], command: str) -> list[str]:
    """docs/DEVIATIONS.md: every row of DEVIATIONS, the switchable ones measured."""
    quad_levels = {r['level'] for r in rows if r['config'].startswith('no ')
                   and r['scene'] in QUAD}
    on_levels = {r['level'] for r in rows if '+' in r['config'] and r['scene'] in QUAD}
    low = ('low_rpm', 'low_rpm_shake')
    lv = ', '.join(str(v) for v in sorted(quad_levels))
    lines = [
        '# Deviations from the HelixTrack paper', '',
        'Generated by `benchmarks/bench_presets.py --report` from '
        '`helixtrack_ros.core.presets.DEVIATIONS` (the one definition of these rows) '
        'and the measurements in `benchmarks/results/presets.jsonl`. '
        'Presets: `paper` (Sec. 3 and S3; where the paper gives no number, the '
        "authors' released configuration), `release` (that configuration's behaviour) "
        'and `default` (ours). Select one with `preset: paper` in the parameter file '
        '(node and CLI; `tracker.*` values given there override it) or '
        '`bench_accuracy.py --preset paper`.', '',
        '## Switchable deviations, measured', '',
        _meta(rows, command), '',
        'Effect of each deviation: our default (with it) -> the default with that '
        "deviation switched to the paper preset's values (without it; for a switch marked "
        "(release), the release preset's: there ours is the paper's rule and the release "
        'differs). Each cell: worst '
        'rotor shaft-RPM MArE [%] and worst max scale error [%], both over the rotors the '
        f'first configuration tracks (MArE <= {LOST_PCT:g} %); then rotors lost (MArE > '
        f'{LOST_PCT:g} %) of all. Quadcopter: 2 m and 4 m at egomotion {lv} (a row '
        'measured at fewer levels compares on those alone: its count of rotors says so); '
        'low RPM: low_rpm ego 1-3 and low_rpm_shake ego 3-7.', '',
        'The last two columns (where measured): the paper preset (without it) -> the paper '
        'preset with this one deviation on (the release preset for a switch marked (release)), '
        'quadcopter at egomotion '
        f'{", ".join(str(v) for v in sorted(on_levels)) or "-"}.', '',
        '| deviation | switch (off in the default) | paper | ours | why | quadcopter: with -> '
        'without | low RPM: with -> without | quadcopter: paper -> paper with it | low RPM: '
        'paper -> paper with it |', '|---|---|---|---|---|---|---|---|---|']
    for d in DEVIATIONS:
        if not d.fields:
            continue
        off = deviation_off(d)
        switch = ', '.join(f'`{f}` {off[f]:.4g}' for f in d.fields)
        switch += '' if d.preset == 'paper' else f' ({d.preset})'
        on = f'{d.preset}+{d.name}'
        lines.append(f'| {d.name} | {switch} | {_md(d.paper)} | {_md(d.ours)} | {_md(d.why)} | '
                     f'{_effect(rows, "no " + d.name, QUAD, quad_levels)} | '
                     f'{_effect(rows, "no " + d.name, low, None)} | '
                     f'{_effect(rows, on, QUAD, on_levels, d.preset)} | '
                     f'{_effect(rows, on, low, None, d.preset)} |')
    lines += ['', 'All of them at once (the presets, same scenes; quadcopter at egomotion '
              f'{lv} here, 1-6 in results/presets.md):', '',
              '| preset | quadcopter: default -> preset | low RPM: default -> preset |',
              '|---|---|---|']
    for p in PRESETS:
        if p != 'default':
            lines.append(f'| {p} | {_effect(rows, p, QUAD, quad_levels)} | '
                         f'{_effect(rows, p, low, None)} |')
    lines += ['', '## Preset paper where the paper gives no number', '',
              '| fields | value | why |', '|---|---|---|']
    lines += [f'| {_md(f)} | {_md(v)} | {_md(w)} |' for f, v, w in PAPER_CHOICES]
    lines += ['', '## Without a switch', '',
              'Every preset runs our version of these.', '',
              '| deviation | paper | ours | why | note |', '|---|---|---|---|---|']
    for d in DEVIATIONS:
        if not d.fields:
            lines.append(f'| {d.name} | {_md(d.paper)} | {_md(d.ours)} | {_md(d.why)} | '
                         f'{_md(d.kernel)} |')
    return lines


def results_table(rows: list[dict]) -> list[str]:
    """The RESULTS.md table: Table 1 layout, MArE and max scale error per preset."""
    presets = tuple(PRESETS)
    head = ' | '.join(f'{m} {p}' for m in ('MArE [%]', 'max scale err [%]') for p in presets)
    lines = [f'| d | M_ego | propeller | {head} |', '|---' * (3 + 2 * len(presets)) + '|']
    for line in table1(rows, presets)[2:]:
        c = line.strip('| ').split(' | ')
        n = len(presets)
        keep = c[:3] + c[3:3 + n] + c[3 + 3 * n:3 + 4 * n]
        lines.append('| ' + ' | '.join(keep) + ' |')
    return lines


def _replace_block(path: str, marker: str, lines: list[str]) -> bool:
    """Replace the text between <!-- marker --> and <!-- /marker --> in a file."""
    with open(path) as fh:
        text = fh.read()
    start, end = f'<!-- {marker} -->', f'<!-- /{marker} -->'
    if start not in text or end not in text:
        return False
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    with open(path, 'w') as fh:
        fh.write(head + start + '\n' + '\n'.join(lines) + '\n' + end + tail)
    return True


def _block(path: str, marker: str) -> list[str]:
    """The lines from <!-- marker --> to <!-- /marker --> of a file (none: empty)."""
    try:
        with open(path) as fh:
            text = fh.read()
    except FileNotFoundError:
        return []
    start, end = f'<!-- {marker} -->', f'<!-- /{marker} -->'
    if start not in text or end not in text:
        return []
    return ['', start + text.split(start, 1)[1].split(end, 1)[0] + end]


def write_reports(rows_path: str, command: str, presets_out: str = 'benchmarks/results/'
                  'presets.md', deviations_out: str = 'docs/DEVIATIONS.md',
                  results: str = 'benchmarks/RESULTS.md') -> None:
    """Write both reports from the JSON rows; refresh the table block of RESULTS.md.

    The block ``<!-- variants -->`` of docs/DEVIATIONS.md (the defaults across
    simulator variants, ``bench_variants.py``, written by hand) is kept.
    """
    rows = load(rows_path)
    for path, lines in ((presets_out, presets_md(rows, command)),
                        (deviations_out, deviations_md(rows, command)
                         + _block(deviations_out, 'variants'))):
        with open(path, 'w') as fh:
            fh.write('\n'.join(lines) + '\n')
        print(f'wrote {path}')
    if _replace_block(results, 'presets table', results_table(rows)):
        print(f'updated {results}')
