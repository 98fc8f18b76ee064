# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Metavision ``.raw`` files (EVT 2.0, 2.1, 3.0): read them as driver-like packets, write them.

A RAW file is a text header of lines that start with ``%`` (for example
``% format EVT3;height=720;width=1280``, ``% evt 3.0``, ``% geometry 1280x720``,
``% date 2023-03-29 16:37:38``), closed by ``% end``, then the sensor's words
exactly as the camera sent them (little-endian; 16-bit for EVT 3.0, 32-bit
for EVT 2.0, 64-bit for EVT 2.1, whose words an IMX636 stores upper half
first: the reader tells the two orders apart by the word codes and gives
the words whole). The format comes from the ``format`` line, else from ``evt``;
the sensor size from ``format``'s ``width``/``height``, else ``geometry``,
else ``width``/``height`` lines.

Packets. The metavision driver publishes about 1 ms of data per message, cut
wherever the camera's USB transfers end; the decoders carry their state from
one packet to the next, so any cut between words decodes. Here the cut is
made by the words' own time, so that the packets are those the simulator and
``packetize`` make: a packet starts at an event and holds the events less
than ``packet_us`` after it. The cut itself is placed before the time words
(EVT 3.0 TIME_HIGH/TIME_LOW, EVT 2.x TIME_HIGH) that lead to the next
packet's first event, or, where none lies between (EVT 2.x events carry their
own low time bits), right before that event. So a packet never ends inside
an event's words (a vector, a CONTINUED word), and it starts with the time of
its first event. A sensor clock going back more than 65 ms also starts a
packet, and a packet never exceeds ``max_words`` words (a stream without
events). The stamp of a packet is its first event's sensor time added to
the header's ``date`` (as UTC; 0 without one), never decreasing.

The file is read in chunks (``chunk_bytes``), so memory stays bounded on long
recordings. Where bytes were inserted or lost, the words are read on from
the byte shift that restores their grid (:mod:`.raw_alignment`). A file
whose data do not end on a whole word raises :class:`TruncatedRawError`
after the last whole packet was given.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
import re

import numpy as np

from helixtrack_ros.codecs.evt21 import swap_halves
from helixtrack_ros.codecs.time_sync import NO_STAMP_NS
from helixtrack_ros.core.jit import kernel, kernel_inline
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.io.raw_alignment import find_realignment, stored_format

#: Encodings a RAW file may hold here, by the name of its ``format`` line.
RAW_FORMATS = {'EVT3': 'evt3', 'EVT2': 'evt2', 'EVT21': 'evt21'}
#: ``% evt`` versions and their format names.
_EVT_VERSIONS = {'3.0': 'EVT3', '3': 'EVT3', '2.0': 'EVT2', '2': 'EVT2', '2.1': 'EVT21'}
_EVT_OF = {'evt3': '3.0', 'evt2': '2.0', 'evt21': '2.1'}
_WORD_BYTES = {'evt3': 2, 'evt2': 4, 'evt21': 8}
_WORD_DTYPES = {2: np.uint16, 4: np.uint32, 8: np.uint64}
#: the word format codes of :func:`_cut_words`
_CUT_FORMAT = {'evt3': 3, 'evt2': 2, 'evt21': 21}
_HEADER_MAX = 1 << 20
_RESET_US = 65_536   # a backward time step this large is a restarted sensor clock

# cutter state slots
_K_HAVE = 0      # 1 once a TIME_HIGH was seen
_K_HIGH = 1      # absolute TIME_HIGH count
_K_LOW = 2       # EVT 3.0 TIME_LOW
_K_START = 3     # time of the open packet's first event (-1: none yet)
_K_CAND = 4      # first time word after the last event word (global index; -1: none)
_K_CUT = 5       # start of the open packet (global word index)
_K_PEND = 6      # a far TIME_HIGH count waiting for the next two to confirm it
_K_PEND_SEEN = 7  # TIME_HIGH words seen that agree with _K_PEND (0: none pending)
_N_K = 8


class RawFileError(ValueError):
    """A ``.raw`` file that cannot be read: no header, an unknown format, no geometry."""


class TruncatedRawError(ValueError):
    """The data of a ``.raw`` file end inside a word (e.g. the recorder was killed).

    Raised after every whole packet was given; ``packets_read`` says how many,
    ``file`` and ``damage`` where and what.
    """

    def __init__(self, file: Path, damage: str, packets_read: int) -> None:
        self.file = Path(file)
        self.damage = damage
        self.messages_read = int(packets_read)
        self.topic = '(raw file)'
        super().__init__(f'{self.file} is cut short ({damage}); read the '
                         f'{self.messages_read} packets before it')

    @property
    def repair(self) -> str:
        """What to do about it: nothing, the lost part is less than one word."""
        return 'Only that partial word is lost; no repair is needed.'


@dataclass(frozen=True)
class RawHeader:
    """What the header of a ``.raw`` file says."""

    #: ``'evt3'``, ``'evt2'`` or ``'evt21'``
    encoding: str
    width: int
    height: int
    #: byte offset of the first data word
    data_offset: int
    #: ROS time of sensor time 0 [ns]: the ``date`` line as UTC, else 0
    date_ns: int = 0
    #: every header line, key (lower case) -> value
    fields: dict = field(default_factory=dict)
    #: the ``key=value`` options of the ``format`` line (keys lower case), e.g.
    #: ``endianness: legacy`` for EVT 2.1 words stored upper half first (IMX636)
    options: dict = field(default_factory=dict)


def _header_lines(path: Path) -> tuple[dict[str, str], int]:
    """The ``% key value`` lines of the header and the offset of the data after them."""
    with path.open('rb') as fh:
        buf = fh.read(_HEADER_MAX)
    fields: dict[str, str] = {}
    pos = 0
    while pos < len(buf) and buf[pos] == ord('%'):
        nl = buf.find(b'\n', pos)
        if nl < 0:
            raise RawFileError(f'{path}: header line at byte {pos} does not end')
        text = buf[pos + 1:nl].decode('latin-1').strip()
        pos = nl + 1
        if text.lower() == 'end':
            break
        key, _, value = text.partition(' ')
        if key:
            fields[key.lower()] = value.strip()
    if not fields:
        raise RawFileError(f'{path}: no Metavision RAW header (the file must start with '
                           "'% ' text lines such as '% format EVT3;height=720;width=1280')")
    return fields, pos


def _size(value: str, path: Path, what: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not 0 < n <= 2048:
        raise RawFileError(f'{path}: bad sensor {what} {value!r} in the header')
    return n


def read_raw_header(path: 'str | Path') -> RawHeader:
    """Parse the header of a ``.raw`` file.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    RawFileError
        (a ValueError) No header, an unknown or missing format, or no sensor size.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'raw file not found: {path}')
    fields, offset = _header_lines(path)
    parts = fields.get('format', '').split(';')
    name = parts[0].strip().upper()
    if not name and 'evt' in fields:
        name = _EVT_VERSIONS.get(fields['evt'].strip(), f'evt {fields["evt"]}')
    if not name:
        raise RawFileError(f"{path}: the header names no event format (no '% format' or "
                           "'% evt' line)")
    if name not in RAW_FORMATS:
        raise RawFileError(f'{path}: unsupported event format {name!r} in the header; '
                           f'supported: {", ".join(RAW_FORMATS)}')
    geo = {k.strip().lower(): v.strip() for k, v in
           (p.split('=', 1) for p in parts[1:] if '=' in p)}
    width, height = geo.get('width'), geo.get('height')
    if (width is None or height is None) and 'geometry' in fields:
        m = re.fullmatch(r'\s*(\d+)\s*x\s*(\d+)\s*', fields['geometry'])
        if m:
            width, height = m.group(1), m.group(2)
    width, height = width or fields.get('width'), height or fields.get('height')
    if width is None or height is None:
        raise RawFileError(f'{path}: the header gives no sensor size (no width/height in '
                           "'% format' and no '% geometry' line)")
    date_ns = utc_date_ns(fields.get('date', ''))
    return RawHeader(RAW_FORMATS[name], _size(width, path, 'width'),
                     _size(height, path, 'height'), offset, date_ns, fields, geo)


def utc_date_ns(text: str) -> int:
    """A Metavision header's ``YYYY-MM-DD HH:MM:SS`` as UTC nanoseconds (0 when unreadable)."""
    try:
        date = datetime.strptime(text.strip(), '%Y-%m-%d %H:%M:%S')
    except ValueError:
        return 0
    return int(date.replace(tzinfo=timezone.utc).timestamp()) * 1_000_000_000


@kernel_inline
def _follow_time_high(state, high, bits, far):
    """Move the absolute TIME_HIGH count to a TIME_HIGH word's ``high`` (``bits`` wide).

    The first one sets it; then the modular difference is a step forward below
    half the range, else back (a glitch or a restarted clock: no wrap); a step
    back past the stream's start is taken as the word's value, as the decoders
    take it, so no time is negative (a negative start read as none). A step
    of more than ``far`` counts either way is taken only once the next two
    TIME_HIGH words go on from it (by at most ``far / 16`` each): the random
    TIME_HIGH words of a damaged block do not, so the packets after it are
    cut by the stream's own time.
    """
    if state[_K_HAVE] == 0:
        state[_K_HAVE] = 1
        state[_K_HIGH] = high
        return
    d = (high - state[_K_HIGH]) & ((1 << bits) - 1)
    step = d if d < (1 << (bits - 1)) else d - (1 << bits)
    cand = state[_K_HIGH] + step
    if cand < 0:    # back past the stream's start: taken as it stands (as the decoders do)
        cand = high
    if -far <= step <= far:
        state[_K_HIGH] = cand
        state[_K_PEND_SEEN] = 0
        return
    if state[_K_PEND_SEEN] > 0 and 0 <= cand - state[_K_PEND] <= max(1, far >> 4):
        state[_K_PEND] = cand
        state[_K_PEND_SEEN] += 1
        if state[_K_PEND_SEEN] >= 3:
            state[_K_HIGH] = cand
            state[_K_PEND_SEEN] = 0
    else:
        state[_K_PEND] = cand
        state[_K_PEND_SEEN] = 1


@kernel
def _cut_words(words, fmt, base, packet_us, max_words, state, cuts, starts):  # noqa: C901, PLR0912, PLR0915 (numba kernel)
    """Find the packet cuts in ``words`` (global index of word 0: ``base``); returns the count.

    ``fmt``: 3, 2 or 21 for EVT 3.0, 2.0 or 2.1 words. ``cuts[i]`` is the global
    index where a packet ends, ``starts[i]`` the time of that packet's first
    event (-1: none). See the module docstring for the rule.
    """
    n_cut = 0
    for k in range(words.shape[0]):
        w = np.int64(words[k])
        g = base + k
        t = np.int64(-1)
        is_event = False
        if fmt == 3:
            typ = w >> 12
            if typ == 0x8 or typ == 0x6:
                if typ == 0x8:
                    _follow_time_high(state, w & 0xFFF, 12, _RESET_US >> 12)
                else:
                    state[_K_LOW] = w & 0xFFF
                if state[_K_CAND] < 0:
                    state[_K_CAND] = g
            elif typ == 0x2 or typ == 0x4 or typ == 0x5 or typ == 0xA:
                is_event = True
                t = (state[_K_HIGH] << 12) | state[_K_LOW]
        else:
            top = 28 if fmt == 2 else 60
            low_at = 22 if fmt == 2 else 54
            typ = (w >> top) & 0xF
            if typ == 0x8:
                _follow_time_high(state, (w >> (top - 28)) & 0x0FFFFFFF, 28, _RESET_US >> 6)
                if state[_K_CAND] < 0:
                    state[_K_CAND] = g
            elif typ == 0x0 or typ == 0x1 or typ == 0xA:
                is_event = True
                t = (state[_K_HIGH] << 6) | ((w >> low_at) & 0x3F)
        if is_event and state[_K_HAVE] != 0:
            start = state[_K_START]
            if start < 0:
                state[_K_START] = t
            elif t >= start + packet_us or t < start - _RESET_US:
                cut = state[_K_CAND] if state[_K_CAND] > state[_K_CUT] else g
                cuts[n_cut] = cut
                starts[n_cut] = start
                n_cut += 1
                state[_K_CUT] = cut
                state[_K_START] = t
        if is_event:
            state[_K_CAND] = -1
        if g - state[_K_CUT] >= max_words:   # no event for too long: cut anyway
            cuts[n_cut] = g
            starts[n_cut] = state[_K_START]
            n_cut += 1
            state[_K_CUT] = g
            state[_K_CAND] = -1
    return n_cut


def _packet(header: RawHeader, payload: np.ndarray, start_us: int, seq: int,
            last_stamp: int) -> EventPacketRecord:
    stamp = max(header.date_ns + max(start_us, 0) * 1000,
                last_stamp + 1 if seq else NO_STAMP_NS + 1)
    return EventPacketRecord(stamp, '', header.height, header.width, seq, 0, header.encoding,
                             False, payload, stamp)


def iter_raw_packets(path: 'str | Path', packet_us: int = 1000, chunk_bytes: int = 1 << 22,
                     max_words: int = 1 << 20,
                     on_notice: 'Callable[[str], None] | None' = None
                     ) -> Iterator[EventPacketRecord]:
    """Stream a ``.raw`` file as driver-like packets (see the module docstring).

    Parameters
    ----------
    path : str or pathlib.Path
        The ``.raw`` file.
    packet_us : int
        Sensor time per packet [us] (the driver's default is 1 ms).
    chunk_bytes : int
        Bytes read at a time.
    max_words : int
        Largest packet in words.
    on_notice : callable, optional
        Given one line each time the words lose their byte grid and are read
        on from the shift that restores it (see :mod:`.raw_alignment`).

    Raises
    ------
    FileNotFoundError, RawFileError
        See :func:`read_raw_header`.
    TruncatedRawError
        After the last packet, if the data end inside a word.
    """
    path = Path(path)
    header = read_raw_header(path)
    cutter = _PacketCutter(header, packet_us, max_words)
    size = _WORD_BYTES[header.encoding]
    dtype = np.dtype(_WORD_DTYPES[size]).newbyteorder('<')
    chunk_bytes = max(size, chunk_bytes - chunk_bytes % size)
    tail = b''
    offset = header.data_offset       # file offset of tail[0]
    grid = None                       # the word format as stored (raw_alignment.FORMATS)
    with path.open('rb') as fh:
        fh.seek(header.data_offset)
        while True:
            read = fh.read(chunk_bytes)
            data = tail + read
            if not read and len(data) < size:
                break
            if grid is None:    # judged on the first words (4096 unless fewer)
                if read and len(data) < 4096 * size:
                    tail = data
                    continue
                grid = stored_format(header.encoding, data,
                                     header.options.get('endianness', '').lower() == 'legacy')
            pos = 0
            while True:
                keep, resume = find_realignment(data, pos, grid, bool(read),
                                                (header.width, header.height))
                words = np.frombuffer(data, dtype, keep, pos)
                yield from cutter.add(swap_halves(words) if grid == 'evt21_swapped' else words)
                if resume < 0:
                    pos += keep * size
                    break
                if on_notice is not None:
                    on_notice(f'{path}: the data lose their {size}-byte word grid near byte '
                              f'{offset + pos + keep * size} (bytes inserted or lost); read '
                              f'on from byte {offset + resume}, dropping '
                              f'{resume - pos - keep * size} bytes')
                pos = resume
            tail = data[pos:]
            offset += pos
    yield from cutter.finish()
    if tail:
        raise TruncatedRawError(path, f'the data end {len(tail)} byte(s) into a {size}-byte '
                                      'word', cutter.seq)


class _PacketCutter:
    """Cuts the words of a ``.raw`` file into packets as they come (module docstring)."""

    def __init__(self, header: RawHeader, packet_us: int, max_words: int) -> None:
        self.header, self.packet_us, self.max_words = header, packet_us, max_words
        self.state = np.full(_N_K, -1, np.int64)
        st = self.state
        st[_K_HAVE] = st[_K_HIGH] = st[_K_LOW] = st[_K_CUT] = st[_K_PEND] = st[_K_PEND_SEEN] = 0
        self.pending = np.empty(0, _WORD_DTYPES[_WORD_BYTES[header.encoding]])
        self.base = 0                  # global index of the next word
        self.seq, self.last_stamp = 0, 0

    def add(self, words: np.ndarray) -> Iterator[EventPacketRecord]:
        """The packets that the words complete (the rest waits for more words)."""
        cuts = np.empty(words.shape[0] + 1, np.int64)
        starts = np.empty(words.shape[0] + 1, np.int64)
        n = _cut_words(words, _CUT_FORMAT[self.header.encoding], self.base, self.packet_us,
                       self.max_words, self.state, cuts, starts)
        pending = np.concatenate([self.pending, words])
        origin = self.base + words.shape[0] - pending.shape[0]   # global index of pending[0]
        for c, s in zip(cuts[:n].tolist(), starts[:n].tolist()):
            payload = pending[:c - origin]
            pending = pending[c - origin:]
            origin = c
            yield self._packet(payload, s)
        self.pending = pending.copy()   # let the chunk's memory go
        self.base += words.shape[0]

    def finish(self) -> Iterator[EventPacketRecord]:
        """The last packet (the words after the last cut), if any."""
        if self.pending.shape[0]:
            yield self._packet(self.pending, int(self.state[_K_START]))

    def _packet(self, payload: np.ndarray, start_us: int) -> EventPacketRecord:
        pkt = _packet(self.header, payload.view(np.uint8), start_us, self.seq, self.last_stamp)
        self.last_stamp, self.seq = pkt.stamp_ns, self.seq + 1
        return pkt


def raw_header_text(encoding: str, width: int, height: int,
                    date: 'datetime | None' = None) -> bytes:
    """The header a Metavision camera writes, for ``encoding`` ``'evt3'``, ``'evt2'`` or
    ``'evt21'``."""
    names = {v: k for k, v in RAW_FORMATS.items()}
    if encoding not in names:
        raise ValueError(f'encoding must be evt3, evt2 or evt21, got {encoding!r}')
    lines = []
    if date is not None:
        lines.append(f'% date {date.strftime("%Y-%m-%d %H:%M:%S")}')
    lines += [f'% evt {_EVT_OF[encoding]}',
              f'% format {names[encoding]};height={int(height)};width={int(width)}',
              f'% geometry {int(width)}x{int(height)}',
              '% integrator_name helixtrack_ros', '% end']
    return ('\n'.join(lines) + '\n').encode('ascii')


class RawFileWriter:
    """Write a ``.raw`` file: the header, then encoded words as they come.

    Examples
    --------
    >>> with RawFileWriter('scene.raw', 'evt3', 1280, 720) as w:   # doctest: +SKIP
    ...     w.write(Evt3Encoder().encode(events))
    """

    def __init__(self, path: 'str | Path', encoding: str, width: int, height: int,
                 date: 'datetime | None' = None) -> None:
        self.path = Path(path)
        self._head = raw_header_text(encoding, width, height, date)
        self._fh = None

    def __enter__(self) -> 'RawFileWriter':  # noqa: D105
        self._fh = self.path.open('wb')
        self._fh.write(self._head)
        return self

    def __exit__(self, *exc: object) -> None:  # noqa: D105
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def write(self, payload: 'bytes | np.ndarray') -> None:
        """Append encoded words (little-endian bytes)."""
        if self._fh is None:
            raise ValueError(f'{self.path} is not open (use the writer in a with block)')
        self._fh.write(payload if isinstance(payload, bytes) else
                       np.ascontiguousarray(payload).tobytes())
