#!/bin/sh
# Builds libprof as it was at a chosen commit (BENCH_BEFORE, default: the last commit
# before issue 18's changes) into BUILD/bench/before, so that make bench measures the
# previous code beside the current one in the same run. Skipped, with a line saying why,
# where the commit is not in this clone (a shallow clone, a tarball).
build=$1
ref=${2:-e30ed88}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$build/bench/before
if ! git -C "$root" rev-parse -q --verify "$ref^{commit}" >/dev/null 2>&1; then
	echo "bench: commit $ref is not in this clone: no 'before' figures" >&2
	rm -rf "$out"
	exit 0
fi
want=$(git -C "$root" rev-parse "$ref^{commit}")
if [ -f "$out/commit" ] && [ "$(cat "$out/commit")" = "$want" ] && [ -f "$out/libprof.so" ]; then
	exit 0
fi
echo "bench: building libprof at $ref into $out (once)" >&2
rm -rf "$out" "$out-src"
mkdir -p "$out-src" || exit 0
git -C "$root" archive "$want" | tar -x -C "$out-src" || { rm -rf "$out-src"; exit 0; }
if ! make -s -C "$out-src" BUILD="$out" -j2 all >"$out-src.log" 2>&1; then
	echo "bench: libprof at $ref does not build here (see $out-src.log): no 'before' figures" >&2
	rm -rf "$out" "$out-src"
	exit 0
fi
rm -rf "$out-src" "$out-src.log"
echo "$want" >"$out/commit"
