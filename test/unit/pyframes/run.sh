#!/bin/sh
# Unit test of preload/stacks/pyframes.c (CPython frames read from inside the process), run under
# each Python given (default /usr/bin/python3): builds stub.so (pyframes.c with stand-ins
# for the rest of libprof), checks pyframes.c's struct offsets against layout_probe built
# from that Python's headers (skipped, with a note, where they are not installed), then
# runs driver.py with stub.so preloaded. Prints the cost per call.
#   BUILD=build test/unit/pyframes/run.sh [PYTHON...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${BUILD:-$root/build}/test/pyframes
cc=${CC:-cc}
mkdir -p "$out"
$cc ${CFLAGS:--O2 -g} -std=gnu11 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
	-ftls-model=initial-exec -I"$root" -I"$root/include" \
	-o "$out/pyframes_stub.so" "$here/stub.c" -ldl -lpthread

[ $# -gt 0 ] || set -- /usr/bin/python3
failed=0
for py in "$@"; do
	minor=$("$py" -c 'import sys; print(sys.version_info[1] if sys.version_info[0] == 3 else 0)')
	set --
	if [ "$minor" -lt 11 ] || [ "$minor" -gt 13 ]; then
		set -- --unsupported
	else
		inc=$("$py" -c 'import sysconfig; print(sysconfig.get_path("include"))')
		plat=$("$py" -c 'import sysconfig; print(sysconfig.get_path("platinclude"))')
		if [ -f "$inc/internal/pycore_frame.h" ]; then
			$cc -I"$inc" -I"$plat" -o "$out/layout_probe-3.$minor" "$here/layout_probe.c"
			set -- --layout "$("$out/layout_probe-3.$minor")" --bench
		else
			echo "pyframes: no headers for $py (python3-dev): struct offsets not checked"
			set -- --bench
		fi
	fi
	LD_PRELOAD="$out/pyframes_stub.so" "$py" "$here/driver.py" "$out/pyframes_stub.so" "$@" ||
		failed=1
done
exit $failed
