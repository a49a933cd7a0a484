#!/bin/sh
# Runs the shared-memory fuzzer for RUNS executions (default 20000: a smoke run) on one
# core, seeds from make_seeds.py, the corpus it grows kept in $BUILD/fuzz/corpus.
set -e
RUNS=${1:-20000}
[ $# -gt 0 ] && shift
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$BUILD/fuzz/corpus" "$BUILD/fuzz/seeds"
python3 "$HERE/make_seeds.py" "$BUILD/fuzz/seeds"
exec "$BUILD/fuzz/fuzz_shm" "$@" -runs="$RUNS" -max_len=1024 -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 -close_fd_mask=2 "$BUILD/fuzz/corpus" "$BUILD/fuzz/seeds"
