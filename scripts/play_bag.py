#!/usr/bin/env python3
# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""Replay the ``EventPacket`` messages of a rosbag2 onto a live topic.

A small rclpy publisher for machines without ``ros2 bag play`` (and for
tests): it reads the bag with ``rosbags`` (sqlite3 or mcap), deserialises
each packet with the installed ``event_camera_msgs`` and publishes it
best effort, keep-last 1000, volatile, like ``metavision_driver``.

Pacing follows the packets' header stamps (the driver's host arrival time),
at ``--rate`` times real pace, or as fast as possible with ``--full-speed``.
``--restamp`` shifts header stamps so that the first packet carries the
current time (keeps relative timing), which a live consumer may expect.

Example::

    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST \\
      .venv/bin/python scripts/play_bag.py bags/run1 --topic /event_camera/events
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
import os
from pathlib import Path
import sys
import time

from event_camera_msgs.msg import EventPacket
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rclpy.utilities import remove_ros_args

MSGTYPE = 'event_camera_msgs/msg/EventPacket'

#: What metavision_driver offers on ``~/events``.
DRIVER_QOS = QoSProfile(reliability=ReliabilityPolicy.BEST_EFFORT,
                        history=HistoryPolicy.KEEP_LAST, depth=1000,
                        durability=DurabilityPolicy.VOLATILE)


def read_packets(bag: str | Path, topic: str | None = None) -> Iterator[tuple[str, bytes]]:
    """Yield ``(topic, cdr_bytes)`` of every ``EventPacket`` in a bag, in log order.

    Parameters
    ----------
    bag : str or Path
        rosbag2 directory (sqlite3 or mcap storage).
    topic : str, optional
        Only this topic; default every ``EventPacket`` topic.

    Raises
    ------
    ValueError
        The bag has no matching ``EventPacket`` topic.
    """
    from rosbags.rosbag2 import Reader

    with Reader(Path(bag)) as reader:
        conns = [c for c in reader.connections
                 if c.msgtype == MSGTYPE and (topic is None or c.topic == topic)]
        if not conns:
            found = sorted({f'{c.topic} ({c.msgtype})' for c in reader.connections})
            raise ValueError(f'{bag}: no {MSGTYPE} topic{" " + topic if topic else ""}; '
                             f'found: {", ".join(found) or "nothing"}')
        for conn, _t, raw in reader.messages(connections=conns):
            yield conn.topic, bytes(raw)


def stamp_ns(msg: EventPacket) -> int:
    """Header stamp of a packet in integer nanoseconds."""
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


def set_stamp(msg: EventPacket, ns: int) -> None:
    """Set a packet's header stamp from integer nanoseconds."""
    ns = max(int(ns), 0)
    msg.header.stamp.sec = ns // 1_000_000_000
    msg.header.stamp.nanosec = ns % 1_000_000_000


@dataclass
class PlayStats:
    """What :func:`play` did."""

    packets: int = 0
    bytes: int = 0
    wall_s: float = 0.0
    stream_s: float = 0.0
    max_late_s: float = 0.0


def play(publisher: Publisher, packets: Iterable[EventPacket], rate: float | None = 1.0,
         restamp: bool = False,
         clock_ns: Callable[[], int] = time.time_ns) -> PlayStats:
    """Publish packets paced by their header stamps.

    Parameters
    ----------
    publisher : rclpy.publisher.Publisher
        An ``EventPacket`` publisher.
    packets : iterable of EventPacket
        In stream order (changed in place when ``restamp``).
    rate : float or None
        Multiple of real pace; None or <= 0 publishes as fast as possible.
    restamp : bool
        Shift stamps so that the first packet carries ``clock_ns()``.
    clock_ns : callable
        Source of "now" for ``restamp`` (ROS or system time, nanoseconds).

    Returns
    -------
    PlayStats
        Counts, wall time, stream time and the worst lateness behind pace.
    """
    stats = PlayStats()
    paced = rate is not None and rate > 0
    wall0 = time.perf_counter()
    first = None
    last = None
    offset = 0
    for msg in packets:
        t = stamp_ns(msg)
        if first is None:
            first = t
            offset = clock_ns() - t if restamp else 0
        if paced:
            target = wall0 + (t - first) * 1e-9 / rate
            now = time.perf_counter()
            if target > now:
                time.sleep(target - now)
            else:
                stats.max_late_s = max(stats.max_late_s, now - target)
        if restamp:
            set_stamp(msg, t + offset)
        publisher.publish(msg)
        stats.packets += 1
        stats.bytes += len(msg.events)
        last = t
    stats.wall_s = time.perf_counter() - wall0
    if first is not None:
        stats.stream_s = (last - first) * 1e-9
    return stats


def wait_for_subscribers(node: Node, publisher: Publisher, count: int,
                         timeout_s: float) -> bool:
    """Wait until ``publisher`` has ``count`` matched subscriptions (no fixed sleeps)."""
    deadline = time.monotonic() + timeout_s
    while publisher.get_subscription_count() < count:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('bag', help='rosbag2 directory')
    ap.add_argument('--topic', help='EventPacket topic in the bag (default: the only one)')
    ap.add_argument('--out', help='publish on this topic (default: the bag topic)')
    pace = ap.add_mutually_exclusive_group()
    pace.add_argument('--rate', type=float, default=1.0, help='multiple of real pace')
    pace.add_argument('--full-speed', action='store_true', help='no pacing')
    ap.add_argument('--restamp', action='store_true', help='stamps start at the current time')
    ap.add_argument('--loop', type=int, default=1, help='play this many times (0 = forever)')
    ap.add_argument('--wait-subscribers', type=int, default=1,
                    help='wait for this many subscribers first (0 = do not wait)')
    ap.add_argument('--wait-timeout', type=float, default=30.0, help='[s]')
    ap.add_argument('--grace', type=float, default=0.5,
                    help='[s] after matching, before the first packet: a best-effort reader '
                         'drops samples of a writer it has not matched yet')
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    argv = list(sys.argv if argv is None else argv)
    ros_args = remove_ros_args(argv)[1:]
    args = _parse(ros_args)
    if 'ROS_AUTOMATIC_DISCOVERY_RANGE' not in os.environ:
        print('play_bag: ROS_AUTOMATIC_DISCOVERY_RANGE is not set; DDS discovery may leave '
              'this machine (export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST)', file=sys.stderr)
    try:
        first_topic = next(read_packets(args.bag, args.topic))[0]
    except (ValueError, FileNotFoundError, StopIteration) as exc:
        print(f'play_bag: {exc or "empty bag"}', file=sys.stderr)
        return 1
    rclpy.init(args=argv)
    node = None
    try:
        node = Node('play_bag')
        pub = node.create_publisher(EventPacket, args.out or first_topic, DRIVER_QOS)
        if args.wait_subscribers > 0 and not wait_for_subscribers(
                node, pub, args.wait_subscribers, args.wait_timeout):
            node.get_logger().error(f'no subscriber on {pub.topic_name} after '
                                    f'{args.wait_timeout:.0f} s')
            return 2
        if args.wait_subscribers > 0:
            time.sleep(args.grace)
        n = 0
        while args.loop == 0 or n < args.loop:
            msgs = (deserialize_message(raw, EventPacket)
                    for _, raw in read_packets(args.bag, args.topic or first_topic))
            stats = play(pub, msgs, None if args.full_speed else args.rate,
                         restamp=args.restamp or n > 0,
                         clock_ns=lambda: node.get_clock().now().nanoseconds)
            node.get_logger().info(
                f'played {stats.packets} packets ({stats.bytes / 1e6:.1f} MB, '
                f'{stats.stream_s:.2f} s of stream) in {stats.wall_s:.2f} s'
                + (f', up to {stats.max_late_s * 1e3:.1f} ms late' if stats.max_late_s else ''))
            n += 1
        time.sleep(0.2)  # let the last best-effort samples leave before the node goes
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
