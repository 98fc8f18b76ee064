# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""The README's section on the helixtrack command names what the commands do and write."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cli_section() -> str:
    text = (ROOT / 'README.md').read_text()
    return text.split('## The `helixtrack` command', 1)[1].split('\n## ', 1)[0]


def test_readme_documents_outputs_progress_and_names():
    section = _cli_section()
    for words in ('rpm.csv', 'results.mcap', 'rpm.png', 'overlay.png', 'detect.png',
                  'events_000000.npz', 'ground_truth.csv', 'x_px,y_px', '--quiet', 'tqdm',
                  'ETA', 'reading order', 'within half a radius', 'self-contained MCAP'):
        assert words in section, words


def test_every_option_of_the_new_features_is_in_the_help():
    from helixtrack_ros.cli import build_parser
    sub = build_parser()._subparsers._group_actions[0].choices
    for name in ('simulate', 'track', 'detect', 'events', 'demo'):
        assert '--quiet' in sub[name].format_help(), name
    assert 'events_000000.npz' in sub['events'].format_help()
