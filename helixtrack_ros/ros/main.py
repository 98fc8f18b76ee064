# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
"""``helixtrack_node``: start rclpy, build the node with the real pipeline, spin, exit code.

A command line that cannot start the node (an unreadable or broken
``--params-file``, a value out of range) gives one line and exit code 1,
never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
import contextlib
from dataclasses import replace
import os
import re
import signal
import sys
import tempfile
import threading
from typing import Any

import rclpy
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import ExternalShutdownException
from rclpy.logging import get_logger
from rclpy.signals import SignalHandlerOptions

from helixtrack_ros.io.params_file import yaml_problem
from helixtrack_ros.pipeline.config import ParamSpec
from helixtrack_ros.ros.executors import freeze_startup_objects, spin
from helixtrack_ros.ros.node import NODE_NAME, HelixtrackNode
from helixtrack_ros.ros.overrides import ros_arguments, section_names_node


def default_pipeline_api() -> tuple[Callable, Callable, dict[str, ParamSpec]]:
    """(factory, warmup, parameter table) of the real pipeline, live defaults."""
    from helixtrack_ros.pipeline import PipelineConfig, TrackingPipeline
    from helixtrack_ros.pipeline.config import parameter_table

    def factory(params: dict[str, Any]) -> TrackingPipeline:
        # live: the packets of the tracked rotors do not wait for a re-detection
        config = PipelineConfig.from_ros_params(params)
        return TrackingPipeline(replace(config, detect_in_background=True))

    def warmup() -> float:
        # every decoder: a camera may send any encoding, and the first packet of one
        # must not wait for its kernel; the detector: start-up and re-detections use it
        from helixtrack_ros.codecs import SUPPORTED_ENCODINGS
        return TrackingPipeline.warmup(SUPPORTED_ENCODINGS, detection=True)

    table = parameter_table(PipelineConfig(realtime_stride=True))
    return factory, warmup, table


def _params_files(argv: list[str]) -> list[str]:
    """The ``--params-file`` paths of a command line's ``--ros-args`` blocks."""
    return [arg for what, arg in ros_arguments(argv) if what == 'file']


def params_file_problem(argv: list[str]) -> str | None:
    """Why a ``--params-file`` of the command line cannot be read, as one line, or None.

    Checked before ``rclpy.init``, which otherwise answers a missing or
    broken file with a traceback. The YAML is parsed, not interpreted, as
    rcl does, so that no file rcl accepts is refused here.
    """
    import yaml
    for path in _params_files(argv):
        try:
            with open(path, encoding='utf-8') as fh:
                for _ in yaml.parse(fh, Loader=yaml.SafeLoader):
                    pass
        except OSError as exc:
            return f'parameter file {path}: {exc.strerror or exc}'
        except UnicodeDecodeError:
            return f'parameter file {path}: not UTF-8 text'
        except yaml.YAMLError as exc:
            return f'parameter file {path} is not valid YAML: {yaml_problem(exc)}'
    return None


def params_files_without_node(argv: list[str], fqn: str) -> list[str]:
    """One line per ``--params-file`` that holds nothing for the node named ``fqn`` (no
    section addresses it: another node's file, an empty one), so that a node falling
    back on detecting its rotors says why (configuration review: it did so silently)."""
    import yaml
    lines = []
    for path in _params_files(argv):
        try:
            with open(path, encoding='utf-8') as fh:
                doc = yaml.safe_load(fh)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue          # (refused before the start: params_file_problem)
        keys = [str(k) for k in doc] if isinstance(doc, dict) else []
        if not any(section_names_node(k, fqn) for k in keys):
            what = f'its sections: {", ".join(keys)}' if keys else 'it holds no sections'
            lines.append(f'parameter file {path} has no section for this node ({fqn} or '
                         f'/**; {what}): none of its parameters apply')
    return lines


def init_rclpy(args: list[str] | None) -> str | None:
    """``rclpy.init``; None, or why rcl refused the command line, as one line.

    rcl logs a line of its own before it raises; fd 2 goes to a temporary
    file meanwhile and is replayed only when the start worked, so that a
    refusal reads as the caller's one line.
    """
    sys.stderr.flush()
    with tempfile.TemporaryFile() as held:
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        try:
            # SIGINT / SIGTERM are the node's own (see main): rclpy's handlers would shut
            # the context down under a running callback
            rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        except RuntimeError as exc:   # rclpy's RCLError
            # rcl appends ', at <source file>:<line>' for every layer
            return re.sub(r', at \S+:\d+', '', ' '.join(str(exc).split()))
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        held.seek(0)
        os.write(2, held.read())
    return None


USAGE = """usage: helixtrack_node [-h] [--ros-args [-p NAME:=VALUE] [--params-file FILE]
                                         [-r '~/events:=/event_camera/events']]

Track propellers from event-camera packets: shaft RPM, blade phase and image pose
per rotor on ~/rotors, ~/health, ~/<rotor>/rpm and ~/<rotor>/homography.

Rotors come from a parameter file (helixtrack detect writes one); with no
rotor_names the node detects them in the first events (auto_detect, on by
default). Quote the '~' remap so that the shell does not expand it.
Parameters (ros2 param describe lists them with their ranges):
"""


def usage() -> str:
    """The node's --help text: how to start it, and its parameters."""
    from helixtrack_ros.pipeline import PipelineConfig
    from helixtrack_ros.pipeline.config import CHOICES, ROTOR_FIELDS, parameter_table
    from helixtrack_ros.ros.parameters import NODE_CHOICES, NODE_PARAMETERS
    lines = [USAGE, '  rotor_names  names of the rotors; each needs rotors.<name>.<field>:']
    lines += [f'    {k:12s} {text}' for k, (_, text) in ROTOR_FIELDS.items()]
    table = {**parameter_table(PipelineConfig(realtime_stride=True)), **NODE_PARAMETERS}
    lines += [f'  {k}  (default {spec.default}) {spec.label}' for k, spec in table.items()
              if not k.startswith('tracker.')]
    lines += [f'  {k}  ({" | ".join(allowed)}) {text}'
              for k, (allowed, text) in {**CHOICES, **NODE_CHOICES}.items()]
    lines.append('  tracker.<name>  the tracker parameters (config/helixtrack.yaml lists them)')
    return '\n'.join(lines)


def _wants_help(argv: list[str]) -> bool:
    """-h / --help before any --ros-args block."""
    for arg in argv[1:]:
        if arg == '--ros-args':
            return False
        if arg in ('-h', '--help'):
            return True
    return False


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Ctrl-C and SIGTERM set ``stop`` (the spin loop ends after the callback it is in)
    instead of raising inside a callback; the previous handlers come back after."""
    def handler(signum: int, frame: Any) -> None:
        stop.set()
    saved = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


def main(args: list[str] | None = None, **node_kwargs: Any) -> int:
    """Run the node until Ctrl-C or shutdown; return the exit code.

    ``args`` is the command line (default ``sys.argv``) with ``--ros-args ...``;
    ``node_kwargs`` go to :class:`HelixtrackNode` (tests inject a pipeline).
    ``-h`` / ``--help`` prints the usage and the parameters and exits.
    """
    if _wants_help(sys.argv if args is None else args):
        print(usage())
        return 0
    reason = params_file_problem(sys.argv if args is None else args)
    if reason is None:
        reason = init_rclpy(args)
    if reason is not None:
        get_logger(NODE_NAME).fatal(f'cannot start: {reason}')
        return 1
    node = None
    code = 0
    stop = threading.Event()
    # until the spin loop runs, SIGTERM interrupts as Ctrl-C does (rclpy's handlers are off)
    term = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        node = HelixtrackNode(**{'command_line': sys.argv if args is None else args,
                                 **node_kwargs})
        for line in params_files_without_node(sys.argv if args is None else args,
                                              node.get_fully_qualified_name()):
            node.get_logger().warning(line)
        freeze_startup_objects()
        with _stop_on_signals(stop):
            spin(node, node.executor_kind, node.on_take_error, stop)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (ValueError, FileNotFoundError, InvalidParameterTypeException,
            InvalidParameterValueException) as exc:
        get_logger(NODE_NAME).fatal(f'cannot start: {exc}')
        code = 1
    finally:
        signal.signal(signal.SIGTERM, term)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code
