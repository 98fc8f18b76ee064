#!/usr/bin/env bash
# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
#
# The test suite: lint, then pytest (core, codecs, simulator, CLI, and the
# node over real rclpy on loopback DDS). Extra arguments go to pytest.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
VENV=${VENV:-$ROOT/.venv}
[ -x "$VENV/bin/python" ] || { echo "no venv: run scripts/setup.sh first" >&2; exit 1; }
# DDS discovery stays on this machine, in a domain of its own
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-$(( ($$ % 80) + 10 ))}
echo "[test] ruff"
"$VENV/bin/ruff" check --quiet .
echo "[test] pytest (ROS_DOMAIN_ID=$ROS_DOMAIN_ID)"
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@" test
