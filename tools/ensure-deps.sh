#!/bin/sh
# Checks for what the build and tests use, and installs what is missing with
# apt-get when run as root on Debian: libstb-dev (stb_ds), and for the tests
# llvm-14-tools (FileCheck-14) and clang (the libFuzzer harnesses). Prints
# what to install otherwise.
set -u
missing=""
[ -f /usr/include/stb/stb_ds.h ] || [ -f /usr/local/include/stb/stb_ds.h ] || missing="$missing libstb-dev"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
if [ "${1:-}" = "--tests" ]; then
    command -v FileCheck-14 >/dev/null 2>&1 || command -v FileCheck >/dev/null 2>&1 || missing="$missing llvm-14-tools"
    command -v clang >/dev/null 2>&1 || missing="$missing clang"
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-deps: installing$missing"
    (apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 ||
     (apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends $missing >/dev/null 2>&1)) && exit 0
fi
echo "ensure-deps: please install:$missing" >&2
exit 1
