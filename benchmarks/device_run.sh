#!/bin/bash
# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
#
# #16's figures on a many-core machine in one short call (the device tool's 16-core x86
# machine, see benchmarks/RESULTS.md): compile the kernels, then bench_scaling.py with
# rotor threads 1 / 2 / 4 / 8 (and 8 pinned to 8 cores) with the CPU profile per rotor
# and of the main thread, then bench_command.py (the whole `helixtrack track` command).
#
# Run from the repository root; wheels of what the machine lacks (rosbags and its needs)
# in .whl/ are installed first. With .dev/base/ holding an older helixtrack_ros/ (only
# files without kernels changed), bench_command runs on both trees in turn. PARTS picks
# what runs (default: every part).
#   OUT=/tmp/dev PARTS="scaling pinned command" benchmarks/device_run.sh [SECONDS_PER_SCENE]
set -u
OUT=${OUT:-/tmp/device_out}
DURATION=${1:-1}
PARTS=${PARTS:-scaling pinned command}
ROOT=$PWD
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
SITE=""
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    SITE=/tmp/site:
fi
export PYTHONPATH="$SITE$ROOT"
log() { echo "[$(date +%T)] $*"; }

log "machine: $(nproc) cores"
python3 -c 'import sys, numba, numpy; print(sys.version.split()[0], numba.__version__, numpy.__version__)'
log "compiling the kernels (two processes)"
python3 -c 'from helixtrack_ros import warmup; warmup._tracker()' &
python3 -c 'from helixtrack_ros import warmup; warmup._simulator_and_detection()' || exit 1
wait $! || exit 1
has() { [[ " $PARTS " == *" $1 "* ]]; }
has scaling && log "scaling" && python3 benchmarks/bench_scaling.py --threads 1,2,4,8 --scenes quadcopter_3m:5,quadcopter_2m:5 \
    --duration "$DURATION" --repeat 2 --profile --scenes-dir /tmp/scenes --out "$OUT/all"
has pinned && log "scaling, pinned to 8 cores" && python3 benchmarks/bench_scaling.py --cpus 8 --threads 8 --scenes quadcopter_3m:5,quadcopter_2m:5 \
    --duration "$DURATION" --repeat 2 --profile --scenes-dir /tmp/scenes --out "$OUT/pinned8"
has command || { log done; exit 0; }
log "whole command"
python3 -m helixtrack_ros.cli simulate --scenario quadcopter_3m --ego-level 6 --duration 2 \
    -o /tmp/cmd_scene -q | head -1
cd /tmp || exit 1   # (python -m puts the working directory first on the path)
if [ ! -d "$ROOT/.dev/base" ]; then
    PYTHONPATH="$SITE$ROOT" python3 "$ROOT/benchmarks/bench_command.py" --scene /tmp/cmd_scene \
        --repeat 3
else
    rm -rf /tmp/base && mkdir -p /tmp/base && cp -rp "$ROOT/helixtrack_ros" /tmp/base/
    cp -r "$ROOT/.dev/base/helixtrack_ros/." /tmp/base/helixtrack_ros/
    for round in 1 2; do
        log "whole command, base tree, round $round"
        PYTHONPATH="$SITE/tmp/base" python3 "$ROOT/benchmarks/bench_command.py" \
            --scene /tmp/cmd_scene --repeat 3
        log "whole command, this tree, round $round"
        PYTHONPATH="$SITE$ROOT" python3 "$ROOT/benchmarks/bench_command.py" \
            --scene /tmp/cmd_scene --repeat 3
    done
fi
log done
