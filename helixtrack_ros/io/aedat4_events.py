# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""AEDAT 4 files: what iniVation's DV software and dv-processing record.

Decoded with the ``aedat`` package (an optional dependency). A file holds
streams (events, frames, IMU samples ...); the events of its one event stream
are read (a stereo file's two need one named: ``--topic`` with the stream's
number). Event times are microseconds of the computer's clock (since 1970):
sensor time counts from the whole second before the first event, and each
packet is stamped at that second plus its sensor time, as the ``dvs_msgs``
readers do. The events are cut into 1 ms ``mono`` packets; a file cut short
gives every whole packet, then :class:`TruncatedAedatError`.
"""

from collections.abc import Callable, Iterator
import itertools
from pathlib import Path
from typing import Any

import numpy as np

from helixtrack_ros.core.events import EventArrays
from helixtrack_ros.io.event_packets import mono_packets
from helixtrack_ros.io.packet_record import EventPacketRecord
from helixtrack_ros.io.raw_file import TruncatedRawError

#: File name suffixes read as AEDAT 4.
AEDAT4_SUFFIXES = ('.aedat4',)
#: Events gathered before they are cut into packets.
_CHUNK = 1 << 20


class Aedat4Error(ValueError):
    """An AEDAT 4 file that cannot be read, in one line."""


class TruncatedAedatError(TruncatedRawError):
    """An AEDAT 4 file whose decoding stops early: it ends inside a packet (the recorder
    was stopped hard) or a packet is damaged (the decoder cannot skip it)."""

    @property
    def repair(self) -> str:
        """What is lost: the last packet if the recorder was stopped hard, else the rest."""
        return ('If the recording was stopped hard, only its last packet is lost; if the file '
                'is damaged there, the events after that point are.')


def _decoder(path: Path) -> Any:
    """An ``aedat.Decoder`` of the file; Aedat4Error in one line."""
    try:
        import aedat
    except ImportError:
        raise Aedat4Error('reading AEDAT 4 files needs the aedat package: '
                          'pip install aedat') from None
    try:
        return aedat.Decoder(str(path))
    except (RuntimeError, OSError) as exc:
        raise Aedat4Error(f'{path}: not a readable AEDAT 4 file ({exc})') from None


def aedat4_stream(path: 'str | Path', stream: 'str | None' = None) -> tuple[int, int, int]:
    """(stream id, width, height) of the file's event stream: ``stream`` (its number) if
    given, else the only one; Aedat4Error."""
    path = Path(path)
    streams = {k: v for k, v in _decoder(path).id_to_stream().items()
               if v.get('type') == 'events'}
    if stream is not None:
        if not str(stream).strip().isdigit() or int(stream) not in streams:
            raise Aedat4Error(f'{path}: no event stream {stream} (event streams: '
                              f'{", ".join(map(str, sorted(streams))) or "none"})')
        sid = int(stream)
    elif len(streams) == 1:
        sid = next(iter(streams))
    elif not streams:
        raise Aedat4Error(f'{path}: no event stream in this AEDAT 4 file')
    else:
        raise Aedat4Error(f'{path} has {len(streams)} event streams: '
                          f'{", ".join(map(str, sorted(streams)))}; choose one with --topic')
    return sid, int(streams[sid]['width']), int(streams[sid]['height'])


def _stream_events(path: Path, sid: int, state: dict) -> Iterator[np.ndarray]:
    """The event stream's packets (structured arrays t, x, y, on). A file cut short ends
    them, what the decoder said kept in ``state['cut']`` (raised as TruncatedAedatError
    once every event before it is given)."""
    try:
        for packet in _decoder(path):
            if packet.get('stream_id') == sid and 'events' in packet:
                yield packet['events']
    except RuntimeError as exc:
        state['cut'] = f'the decoder stopped: {exc}'


def _event_chunks(path: Path, sid: int, state: dict,
                  on_notice: 'Callable[[str], None]') -> Iterator[EventArrays]:
    """The events in time order, in chunks of about :data:`_CHUNK`, their times counted
    from ``state['base']`` [us] (set at the first event: its whole second)."""
    parts, n, last_t, unsorted = [], 0, None, 0
    for block in _stream_events(path, sid, state):
        if not len(block):
            continue
        t = block['t'].astype(np.int64)
        if state['base'] is None:
            state['base'] = int(t[0]) // 1_000_000 * 1_000_000
        ev = EventArrays(t - state['base'], block['x'].astype(np.uint16),
                         block['y'].astype(np.uint16), block['on'].astype(np.uint8))
        if (len(ev) > 1 and np.any(np.diff(ev.t_us) < 0)) or (
                last_t is not None and int(ev.t_us[0]) < last_t):
            unsorted += 1
        parts.append(ev)
        last_t, n = int(ev.t_us[-1]), n + len(ev)
        if n >= _CHUNK:
            yield _ordered(parts, unsorted)
            parts, n = [], 0
    if parts:
        yield _ordered(parts, unsorted)
    if unsorted:
        on_notice(f'{path}: {unsorted} packet(s) of events out of time order were sorted')


def _ordered(parts: 'list[EventArrays]', unsorted: int) -> EventArrays:
    """The parts joined, sorted by time when any was out of order."""
    ev = EventArrays.concatenate(parts)
    return ev.time_sorted() if unsorted else ev


def iter_aedat4_packets(path: 'str | Path', stream: 'str | None' = None, packet_us: int = 1000,
                        on_notice: 'Callable[[str], None] | None' = None
                        ) -> Iterator[EventPacketRecord]:
    """Stream an AEDAT 4 file's events as ``mono`` packet records of ``packet_us`` each."""
    path = Path(path)
    sid, width, height = aedat4_stream(path, stream)
    state: dict = {'base': None, 'cut': None}
    chunks = _event_chunks(path, sid, state, on_notice or (lambda line: None))
    first, n = next(chunks, None), 0
    if first is not None:
        for pkt in mono_packets(itertools.chain([first], chunks), width, height,
                                state['base'] * 1000, packet_us):
            n += 1
            yield pkt
    if state['cut'] is not None:
        raise TruncatedAedatError(path, state['cut'], n)
