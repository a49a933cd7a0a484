#!/bin/sh
# Makes the man pages from prof's own help texts (help2man): prof(1) and prof-COMMAND(1)
# for each command prof --help lists, into BUILD/man/man1. usage: man.sh BUILD
set -e
build=$1
prof=$(cd "$build" && pwd)/prof
if ! command -v help2man >/dev/null 2>&1; then
	echo "man.sh: help2man is not installed (Debian: apt-get install help2man); no man pages" >&2
	exit 1
fi
version=$("$prof" --version | sed 's/.* //')
out=$build/man/man1
wrap=$build/man/bin
mkdir -p "$out" "$wrap"
help2man -N --version-string="$version" -n "the libprof profiler's command" \
	-o "$out/prof.1" "$prof"
# "  report FILE.prof [options]         print the tables ..." -> report, its summary
"$prof" --help | sed -n 's/^  \([a-z][a-z]*\) .\{20,\}  \(.*\)$/\1\t\2/p' |
	while IFS='	' read -r cmd summary; do
		[ "$cmd" = help ] && continue
		summary=$(printf "%s" "$summary" | sed "s/ ([^)]*$//")
		printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$prof" "$cmd" >"$wrap/prof-$cmd"
		chmod +x "$wrap/prof-$cmd"
		help2man -N --version-string="$version" -n "$summary" \
			-o "$out/prof-$cmd.1" "$wrap/prof-$cmd"
	done
echo "man pages: $out"
