#!/bin/bash
# Where a PyTorch CNN step's time goes under PROFILER_STACK=alloc, two libprof builds side
# by side: perf samples of the training process in its steady state, interleaved rounds.
# Prints per build and round libprof.so's share of the process's samples and the
# remembered-stack lookup's (cache_set + cache_find). Needs perf (linux-perf).
#   bench/perf_share.sh BASE_BUILD CUR_BUILD [ROUNDS] [PYTHON]
# (docs/BENCHMARKS.md, "Fifth session on issue 29's cost")
set -e
base=${1:?usage: perf_share.sh BASE_BUILD CUR_BUILD [ROUNDS] [PYTHON]}
cur=${2:?usage: perf_share.sh BASE_BUILD CUR_BUILD [ROUNDS] [PYTHON]}
rounds=${3:-2}
py=${4:-/usr/bin/python3}
command -v perf >/dev/null || { echo "perf_share.sh: needs perf (apt-get install linux-perf)" >&2; exit 2; }
model=$(cd "$(dirname "$0")" && pwd)/torch_stacks_model.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for r in $(seq "$rounds"); do
	for side in base cur; do
		build=$base; [ $side = cur ] && build=$cur
		env LD_PRELOAD="$build/libprof.so" PROFILER_AUTOSTART=1 PROFILER_STACK=alloc \
			PROFILER_OUTPUT="$work/run" "$py" "$model" cnn plain 2500 20 1 \
			>"$work/out" 2>&1 &
		pid=$!
		sleep 14 # past the import and the first steps
		perf record -q -e cpu-clock -F 5000 -p "$pid" -o "$work/perf.data" -- sleep 6 2>/dev/null
		wait "$pid"
		share=$(perf report -i "$work/perf.data" --sort dso -q 2>/dev/null |
			awk '/libprof.so/ {print $1}')
		lookup=$(perf report -i "$work/perf.data" --dso libprof.so --sort sym -q 2>/dev/null |
			awk '/cache_set|cache_find/ {s += $1} END {printf "%.2f%%", s}')
		echo "round $r $side ($build): libprof.so ${share:-?} of the process, lookups $lookup"
		rm -f "$work"/run*
	done
done
