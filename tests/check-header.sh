#!/bin/sh
# The header compiles without a warning as C99, C11 and C++17 (g++, clang++),
# in two translation units linked together, with GPUIR_STATIC, and with
# GPUIR_STB_DS_IMPLEMENTATION (no libstb at link time). One line per build.
cd "$(dirname "$0")/.." || exit 1
STB=$(pkg-config --cflags stb 2>/dev/null || echo -I/usr/include/stb)
LIBSTB=$(pkg-config --libs stb 2>/dev/null || echo -lstb)
W="-Wall -Wextra -Wpedantic -Werror"
out=build/header; mkdir -p $out
try() {  # try name command...
    name=$1; shift
    if "$@" >$out/$name.log 2>&1; then echo "PASS header: $name"
    else echo "FAIL header: $name"; sed -n '1,20p' $out/$name.log >&2; fi
}
lang() { case $1 in *++) echo "-x c++" ;; *) echo "-x c" ;; esac; }
for cfg in "gcc c99" "gcc c11" "clang c99" "clang c11" "g++ c++17" "clang++ c++17"; do
    set -- $cfg; cc=$1; std=$2
    command -v $cc >/dev/null 2>&1 || { echo "SKIP header: $cc $std (no $cc)"; continue; }
    x=$(lang $cc)
    try "$cc-$std-two-tu" sh -c "$cc -std=$std $W $STB $x tests/header/tu_impl.c $x tests/header/tu_use.c -o $out/two-tu-$cc-$std $LIBSTB -lm && $out/two-tu-$cc-$std"
    try "$cc-$std-static" $cc -std=$std $W $STB -DGPUIR_IMPLEMENTATION -DGPUIR_STATIC -fsyntax-only $x gpuir.h
done
try "gcc-stb-ds-implementation" sh -c "gcc -std=c99 $W $STB -DGPUIR_STB_DS_IMPLEMENTATION -x c tests/header/tu_impl.c -x c tests/header/tu_use.c -o $out/own-stb -lm && $out/own-stb"
try "public-part-needs-no-stb" gcc -std=c99 $W -fsyntax-only -x c gpuir.h
# -std=c99 with <stdio.h> before gpuir.h: glibc settles the feature macros
# without POSIX; one #error says what to define, and nothing deeper fails.
printf '#include <stdio.h>\n#define GPUIR_IMPLEMENTATION\n#include "gpuir.h"\nint main(void) { return 0; }\n' \
    > $out/stdio-first.c
if gcc -std=c99 -I. $STB -c $out/stdio-first.c -o $out/stdio-first.o >$out/stdio-first.log 2>&1; then
    echo "FAIL header: stdio-first-c99 compiled (it cannot have POSIX)"
elif [ "$(grep -c ': error:' $out/stdio-first.log)" = 1 ] && grep -q '#define _POSIX_C_SOURCE 200809L' $out/stdio-first.log
then echo "PASS header: stdio-first-c99 gives one #error naming _POSIX_C_SOURCE"
else echo "FAIL header: stdio-first-c99 gives $(grep -c ': error:' $out/stdio-first.log) errors"; sed -n '1,10p' $out/stdio-first.log >&2; fi
