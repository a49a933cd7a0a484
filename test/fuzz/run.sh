#!/bin/sh
# Runs a fuzzer for RUNS executions (default 20000: a smoke run) on one core, the corpus
# it grows kept in $BUILD/fuzz/. FUZZER=shm (default): the shared-memory drain, seeds
# from make_seeds.py; FUZZER=capture: the capture readers, seeds in capture_seeds/.
set -e
RUNS=${1:-20000}
[ $# -gt 0 ] && shift
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
case ${FUZZER:-shm} in
shm)
	mkdir -p "$BUILD/fuzz/corpus" "$BUILD/fuzz/seeds"
	python3 "$HERE/make_seeds.py" "$BUILD/fuzz/seeds"
	exec "$BUILD/fuzz/fuzz_shm" "$@" -runs="$RUNS" -max_len=1024 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -close_fd_mask=2 "$BUILD/fuzz/corpus" "$BUILD/fuzz/seeds"
	;;
capture)
	mkdir -p "$BUILD/fuzz/corpus_capture"
	exec "$BUILD/fuzz/fuzz_capture" "$@" -runs="$RUNS" -max_len=16384 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -close_fd_mask=2 \
		"$BUILD/fuzz/corpus_capture" "$HERE/capture_seeds"
	;;
*)
	echo "run.sh: FUZZER must be shm or capture" >&2
	exit 2
	;;
esac
