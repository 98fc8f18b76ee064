# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Text files of decoded events, one per line: the CSV of Metavision tools, public datasets.

Two layouts are common, and both are read:

- Metavision's ``metavision_file_to_csv``: ``x,y,p,t`` (t in microseconds),
  optionally after a header line ``%geometry:<width>,<height>``;
- the UZH-RPG datasets' ``events.txt`` (and tools that follow it):
  ``t x y p`` with t in seconds (a fractional number), optionally after a
  first line ``<width> <height>``.

A line of names (``t``/``ts``/``timestamp``/``time``, ``x``, ``y``,
``p``/``pol``/``polarity``, as iniVation's DV writes) says the order;
otherwise the order is the one whose polarity column holds only -1, 0 or 1
and whose time column does not fall (but for 1 % of its steps). Fields are separated by commas,
semicolons, tabs or spaces. Times with a fraction are seconds, whole ones
microseconds (a name ending in ``_us``, ``_ns`` or ``_s`` says so); most lines decide,
and the few with a fraction among whole microseconds are damaged lines. Whole times
that can only be nanoseconds (beyond 143 years in microseconds, or every step a
multiple of 1000: :func:`~helixtrack_ros.io.npz_events.nanoseconds_reason`) are read as
nanoseconds and said, unless the column's name gives the unit. Lines
that are not four numbers (a damaged line, a file cut mid-line) are left out
and said once, unless at least half are (then the file is refused). Lines starting
with ``%`` or ``#`` are comments, ``% Width 640`` / ``% Height 480`` and
``%geometry:640,480`` give the sensor size, else the events do. A file is
parsed once per process (:func:`read_text_events`) and its events kept
while it is the last one read, since the size must be known before packets.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
import functools
import io
from pathlib import Path
import re

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io.event_packets import mono_packets
from helixtrack_ros.io.npz_events import MAX_T_US, nanoseconds_reason, pixel_problem, polarity_on
from helixtrack_ros.io.packet_record import EventPacketRecord

#: File name endings read as text events.
TEXT_SUFFIXES = ('.csv', '.txt')
#: Bytes parsed at a time (cut at a line end).
_CHUNK_BYTES = 32 << 20
#: The longest header line read.
_LONGEST_LINE = 1 << 16
#: Column names understood in a header line, by what they hold.
_NAMES = {'t': ('t', 'ts', 'time', 'timestamp', 't_us', 't_s', 't_ns', 'timestamp_us',
                'timestamp_ns'),
          'x': ('x',), 'y': ('y',), 'p': ('p', 'pol', 'polarity')}
#: The two orders of unnamed columns, the first preferred for the suffix that names it.
_ORDERS = {'.csv': ('xypt', 'txyp'), '.txt': ('txyp', 'xypt')}
_SEPARATORS = re.compile(rb'[,;\t ]+')
#: The separators as spaces, and carriage returns dropped (bytes.translate: fast).
_TO_SPACES = bytes.maketrans(b',;\t', b'   ')
# (one way to match each number: a long line of digits must not backtrack quadratically)
_NUMBER = rb'(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|(?i:[-+]?(?:nan|inf(?:inity)?)))'
#: A line (separators as spaces) that is neither blank nor four numbers.
_NOT_EVENT = re.compile(rb'^(?! *$| *%s +%s +%s +%s *$).*$' % ((_NUMBER,) * 4), re.M)
#: The UTF-8 byte order mark some editors and spreadsheets write first.
_BOM = b'\xef\xbb\xbf'


class TextEventsError(ValueError):
    """A text file that holds no events in a layout this reader knows (one line)."""


@dataclass(frozen=True)
class TextEvents:
    """A text file's events (time-sorted), sensor size and the repairs made reading it.

    The size is 0 x 0 (unknown) for a file without events or a size line: no
    made-up size is passed on.
    """

    events: EventArrays
    width: int
    height: int
    notices: tuple[str, ...]


def read_text_events(path: 'str | Path') -> TextEvents:
    """The file's events and size; TextEventsError when it cannot be read as events."""
    path = Path(path)
    stat = path.stat()
    with path.open('rb') as fh:
        if fh.read(2) == _GZIP_MAGIC:   # (its bytes were printed as a line that is no event)
            raise TextEventsError(f'{path}: gzip-compressed: decompress it first '
                                  f'(gunzip -c {path} > events{path.suffix})')
    return _read_cached(str(path), stat.st_mtime_ns, stat.st_size)


#: the first bytes of a gzip file
_GZIP_MAGIC = b'\x1f\x8b'


def iter_text_packets(path: 'str | Path', on_notice: 'Callable[[str], None] | None' = None,
                      packet_us: int = 1000) -> Iterator[EventPacketRecord]:
    """Stream a text file's events as ``mono`` packet records of ``packet_us`` each."""
    text = read_text_events(path)
    for line in text.notices:
        if on_notice is not None:
            on_notice(line)
    ev = text.events
    step = 1 << 20
    chunks = (ev.slice(lo, min(lo + step, len(ev))) for lo in range(0, len(ev), step))
    yield from mono_packets(chunks, text.width, text.height, 0, packet_us)


@dataclass
class _BadLines:
    """The lines left out as not events: how many, and the first (its number, text)."""

    count: int = 0
    first: str = ''

    def add(self, count: int, line: int, text: bytes) -> None:
        if count and not self.first:
            self.first = f'line {line}: {text.decode("latin-1").strip()[:60]!r}'
        self.count += count


@functools.lru_cache(maxsize=1)
def _read_cached(path: str, _mtime_ns: int, _size: int) -> TextEvents:
    """:func:`read_text_events` of one version of a file (the last one kept)."""
    file = Path(path)
    bad = _BadLines()
    with file.open('rb') as fh:
        head = _Header.read(file, fh)
        parts = [_parse(file, chunk, line0, bad)
                 for chunk, line0 in _chunks(file, fh, head.line)]
    table = np.concatenate(parts) if parts else np.empty((0, 4))
    return _events(file, table, head, bad)


@dataclass
class _Header:
    """What the lines before the events say: size, column order, time unit."""

    width: int = 0
    height: int = 0
    order: str = ''        # 'txyp'-like, '' when the events must tell
    scale: float = 0.0     # to microseconds; 0 when the events must tell
    unit_named: bool = False   # the time column's name gives its unit (no nanosecond guess)
    line: int = 1          # number of the first event line
    notes: list[str] = field(default_factory=list)   # said with the events' notices

    @classmethod
    def read(cls, path: Path, fh: io.BufferedReader) -> '_Header':
        """Read the header lines and leave ``fh`` at the first event line."""
        head = cls()
        if fh.peek(3)[:3] == _BOM:
            fh.read(3)
        while True:
            pos = fh.tell()
            raw = fh.readline(_LONGEST_LINE)
            if not raw:
                return head
            if len(raw) == _LONGEST_LINE and not raw.endswith(b'\n'):
                raise TextEventsError(f'{path}: line {head.line} is longer than '
                                      f'{_LONGEST_LINE} bytes: not a text file of events')
            text = raw.decode('latin-1').strip()
            if not text or text[0] in '%#':
                head._comment(text[1:].strip())
            elif not head._names(path, text) and not head._size_line(text):
                fh.seek(pos)
                return head
            head.line += 1

    def _comment(self, text: str) -> None:
        m = re.match(r'geometry\s*[:=]?\s*(\d+)\s*[,x ]\s*(\d+)\s*$', text, re.I)
        if m and all(0 < int(v) <= 65535 for v in m.groups()):
            self.width, self.height = int(m.group(1)), int(m.group(2))
            return
        m = re.match(r'(width|height)\s*[:=]?\s*(\d+)\s*$', text, re.I)
        if m and 0 < int(m.group(2)) <= 65535:
            setattr(self, m.group(1).lower(), int(m.group(2)))
        elif re.match(r'(geometry|width|height)\b', text, re.I):
            # (found by a review: "%geometry:-3,-3" or "nan,inf" went unmentioned)
            self.notes.append(f'line {self.line}: {text[:40]!r} gives no sensor size (whole '
                              'numbers 1..65535): the size comes from the events')

    def _names(self, path: Path, text: str) -> bool:
        """A line of column names (True), which must name t, x, y and p."""
        # (a spreadsheet quotes its column names)
        words = [w.strip(b'"\'').lower() for w in _SEPARATORS.split(text.encode()) if w]
        if not words or any(_is_number(w) for w in words):
            return False
        found = {}
        for i, w in enumerate(words):
            kind = next((k for k, names in _NAMES.items() if w.decode() in names), None)
            if kind is not None:
                found.setdefault(kind, (i, w.decode()))
        if len(found) < 4 or len(words) != 4:
            raise TextEventsError(
                f'{path}: line {self.line}: {text[:60]!r} is neither events nor column names '
                '(expected four named t (or timestamp), x, y and p (or polarity))')
        self.order = ''.join(sorted(found, key=lambda k: found[k][0]))
        unit = found['t'][1]
        # (a name ending in _us says microseconds, fractions too: t_us of 1234.5 were read
        # as seconds, 400,000 s of sensor time; formats review)
        self.scale = (1e-3 if unit.endswith('_ns') else 1e6 if unit.endswith('_s')
                      else 1.0 if unit.endswith('_us') else 0.0)
        self.unit_named = unit.endswith(('_us', '_ns', '_s'))
        return True

    def _size_line(self, text: str) -> bool:
        """The UZH-RPG first line ``<width> <height>`` (True)."""
        words = text.split()
        if self.line == 1 and len(words) == 2 and all(w.isdigit() for w in words):
            self.width, self.height = int(words[0]), int(words[1])
            return True
        return False


def _is_number(word: bytes) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _chunks(path: Path, fh: io.BufferedReader, line0: int) -> Iterator[tuple[bytes, int]]:
    """The rest of the file in pieces that end at a line end, with their first line."""
    tail = b''
    while True:
        block = fh.read(_CHUNK_BYTES)
        data = tail + block
        if not block:
            if data.strip():
                yield data, line0
            return
        cut = data.rfind(b'\n') + 1
        if cut == 0 and len(data) > _LONGEST_LINE:
            raise TextEventsError(f'{path}: line {line0} is longer than {_LONGEST_LINE} bytes: '
                                  'not a text file of events')
        data, tail = data[:cut], data[cut:]
        if data:
            yield data, line0
            line0 += data.count(b'\n')


def _parse(path: Path, chunk: bytes, line0: int, bad: _BadLines) -> np.ndarray:
    """A piece of event lines as an (n, 4) array (whole numbers kept exact).

    Lines that are not four numbers are left out and counted in ``bad`` (the
    pattern is tried only when the fast parse fails: clean files pay nothing).
    """
    text = chunk.translate(_TO_SPACES, b'\r')
    table = _table(text)
    if table is None:
        first = _NOT_EVENT.search(text)
        if first is not None:
            text, count = _NOT_EVENT.subn(b'', text)
            bad.add(count, line0 + chunk.count(b'\n', 0, first.start()),
                    chunk[first.start():].split(b'\n', 1)[0])
            table = _table(text)
    if table is None:
        raise TextEventsError(_bad_line(path, chunk, line0))
    return table


def _table(text: bytes) -> 'np.ndarray | None':
    """Lines of four numbers as an (n, 4) array; None when some line is not."""
    if not text.strip():
        return np.empty((0, 4), np.int64)
    # (integers parse 2.5 times faster; a decimal point makes that try a waste)
    for dtype in (np.float64,) if b'.' in text else (np.int64, np.float64):
        try:
            table = np.loadtxt(io.BytesIO(text), dtype=dtype, ndmin=2)
        except ValueError:
            continue
        if table.size and table.shape[1] != 4:
            return None
        return table.reshape(-1, 4)
    return None


def _bad_line(path: Path, chunk: bytes, line0: int) -> str:
    """The one line that says which line is not an event and why."""
    for k, raw in enumerate(chunk.splitlines()):
        words = [w for w in _SEPARATORS.split(raw.strip()) if w]
        if not words:
            continue
        if len(words) != 4 or not all(_is_number(w) for w in words):
            shown = raw.decode('latin-1').strip()[:60]
            return (f'{path}: line {line0 + k}: {shown!r} is not an event (four numbers: '
                    't, x, y, p in some order)')
    return f'{path}: lines {line0}..: not events of four numbers'


def _events(path: Path, table: np.ndarray, head: _Header, bad: _BadLines) -> TextEvents:
    """The columns as events: order, time unit, polarity, checks, time order."""
    order = head.order or _order(path, table)
    t, notices = table[:, order.index('t')], list(head.notes)
    if not np.all(np.isfinite(t)):
        raise TextEventsError(f'{path}: {int(np.sum(~np.isfinite(t)))} time(s) are not numbers')
    scale, odd = head.scale, None
    if not scale:
        scale, odd = _unit(t)
        guess = scale == 1.0 and odd is None and not head.unit_named
        ns = nanoseconds_reason(t) if guess else None
        if ns is not None:    # (read as microseconds, a second took a thousand to track)
            scale = 1e-3
            notices.append(f'the times are nanoseconds ({ns}): read as such; name the time '
                           'column t_us in a first line to read them as microseconds')
    if scale == 1e6:
        _refuse_whole_seconds(path, t)
    if odd is not None:
        notices.append(f'{int(odd.sum())} event(s) have a time with a fraction (the first '
                       f'{t[odd][0]:g}) among whole microseconds: left out as damaged lines')
        table, t = table[~odd], t[~odd]
    n_bad = bad.count + (0 if odd is None else int(odd.sum()))
    if n_bad and n_bad >= len(t):
        what = (f'{bad.first!s} is not an event (four numbers: t, x, y, p in some order)'
                if bad.first else 'times with a fraction among whole microseconds')
        raise TextEventsError(f'{path}: {what}; {n_bad} of {n_bad + len(t)} lines are not '
                              'events')
    if bad.count:
        notices.append(f'{bad.count} line(s) are not events (four numbers) and are left out, '
                       f'the first {bad.first}')
    cols = {k: table[:, order.index(k)] for k in 'txyp'}
    # (whole nanoseconds exactly: a float has 53 bits)
    t_us = t if scale == 1.0 and t.dtype.kind == 'i' else \
        t // 1000 if scale == 1e-3 and t.dtype.kind == 'i' else np.round(t * scale)
    if len(t_us) and (t_us.min() < 0 or t_us.max() > MAX_T_US):
        raise TextEventsError(f'{path}: times run from {t.min():g} to {t.max():g}'
                              f'{" s" if scale == 1e6 else ""}; sensor times lie within 0..'
                              f'{MAX_T_US} us')
    for k in 'xy':
        problem = pixel_problem(k, cols[k])
        if problem is not None:
            raise TextEventsError(f'{path}: {problem}')
    ev = EventArrays(t_us.astype(np.int64), cols['x'].astype(np.uint16),
                     cols['y'].astype(np.uint16), polarity_on(cols['p']))
    out = ev.time_sorted()
    if out is not ev:
        notices.append(f'{ev.late()[0]} event(s) come earlier than events before them: '
                       'sorted by time')
    width, height = head.width, head.height
    if not (width > 0 and height > 0):    # (no events and no size line: 0, unknown)
        width, height = ((int(out.x.max()) + 1, int(out.y.max()) + 1) if len(out) else (0, 0))
    return TextEvents(out, width, height, tuple(notices))


def _refuse_whole_seconds(path: Path, t: np.ndarray) -> None:
    """Refuse times in seconds that are whole numbers a second or more apart (median).

    Found by a review: microseconds under a ``t_s`` header read as a 33-hour recording,
    tracked for minutes; no event camera's events are seconds apart.
    """
    if len(t) < 100 or np.any(t != np.round(t)):
        return
    step = float(np.median(np.diff(np.unique(t)))) if len(np.unique(t)) > 1 else 0.0
    if step >= 1.0:
        raise TextEventsError(f'{path}: the times, in seconds by the column name, are whole '
                              f'numbers {step:g} s apart (the median step): microseconds? '
                              'name the time column t_us')


def _unit(t: np.ndarray) -> tuple[float, 'np.ndarray | None']:
    """The times' scale to microseconds, decided by most of them, and those that disagree.

    Mostly times with a fraction: seconds (a whole second is a time too); mostly whole:
    microseconds, and the times with a fraction among them damaged (None: no such time).
    """
    if t.dtype.kind != 'f':
        return 1.0, None
    odd = t != np.round(t)
    if 2 * np.count_nonzero(odd) > len(t):
        return 1e6, None
    return 1.0, (odd if odd.any() else None)


def _order(path: Path, table: np.ndarray) -> str:
    """The column order of unnamed columns: the first of the suffix's orders that fits."""
    sample = table[:100_000]
    orders = _ORDERS.get(path.suffix.lower(), _ORDERS['.txt'])
    if len(sample) < 2:
        return orders[0]      # (nothing to tell by; one event tracks nothing either way)
    for order in orders:
        p, t = sample[:, order.index('p')], sample[:, order.index('t')]
        # (a few events out of order are sorted later; a column of pixels goes up and down)
        if np.all(np.isin(p, (-1, 0, 1))) and np.mean(np.diff(t) < 0) <= 0.01:
            return order
    raise TextEventsError(f'{path}: cannot tell which column is the time: neither t,x,y,p nor '
                          'x,y,p,t fits (polarity -1/0/1, time not falling); put a line of '
                          'names first, e.g. "t,x,y,p"')
