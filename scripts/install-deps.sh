#!/bin/sh
# Installs the Debian packages libprof needs to build and test, when they are missing.
set -e
need=""
for pkg in build-essential libzstd-dev libcmocka-dev libunwind-dev python3; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
		need="$need $pkg"
done
[ -z "$need" ] && exit 0
echo "installing:$need"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
