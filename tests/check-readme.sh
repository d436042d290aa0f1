#!/usr/bin/env bash
# Every ```c block of README.md and docs/*.md compiles without warnings,
# and runs (exit 0) when it is a whole program:
#   - a block that defines GPUIR_IMPLEMENTATION is built and run alone;
#   - a block with a main() is linked against the implementation compiled
#     once (examples/gpuir_impl.c: make's build/gpuir_impl.o, as `make run`
#     uses, else compiled here) and run;
#   - any other block is compiled as a translation unit (-c).
# A fragment that is not a translation unit is skipped when the line right
# before its fence is exactly `<!-- fragment -->` (docs/testing.md). Blocks
# are compiled from the repository root: `#include "gpuir.h"` finds the
# header with -I. One PASS/FAIL line per block. Every ```mlir block must
# be a module tools/gpuir-opt --verify-roundtrip takes.
cd "$(dirname "$0")/.." || exit 1
out=build/readme
mkdir -p $out
STB=$(pkg-config --cflags stb 2>/dev/null || echo -I/usr/include/stb)
LIBSTB=$(pkg-config --libs stb 2>/dev/null || echo -lstb)
CC="cc -std=c99 -Wall -Wextra -Werror -I. $STB"
impl=$out/gpuir_impl.o
# make's object (examples/gpuir_impl.c, with stricter flags) when it is current
[ build/gpuir_impl.o -nt gpuir.h ] && [ build/gpuir_impl.o -nt examples/gpuir_impl.c ] && impl=build/gpuir_impl.o

# extract FILE: writes $out/<name>-<n>.c per block, one "n skip|keep" line each
extract() {
    awk -v base="$out/$2" '
        /^```c$/ { n++; on = 1; skip = (prev == "<!-- fragment -->"); print n, (skip ? "skip" : "keep");
                   f = base "-" n ".c"; printf "" > f; prev = $0; next }
        /^```/ && on { on = 0; close(f); prev = $0; next }
        on { print > f }
        { prev = $0 }' "$1"
}

total=0
for md in README.md docs/*.md; do
    [ -f "$md" ] || continue
    name=$(echo "$md" | tr '/.' '__')
    while read -r n what; do
        total=$((total + 1))
        src=$out/$name-$n.c
        label="readme: $md block $n"
        if [ "$what" = skip ]; then echo "PASS $label (a marked fragment, not compiled)"; continue; fi
        if grep -q 'GPUIR_IMPLEMENTATION' "$src"; then
            how="built alone and ran"
            $CC "$src" -o $out/$name-$n $LIBSTB -lm -ldl -pthread >$out/log 2>&1 &&
                timeout 60 $out/$name-$n >$out/run.log 2>&1
        elif grep -q '^int main' "$src"; then
            how="linked with the implementation and ran"
            { [ -f $impl ] && [ $impl -nt gpuir.h ] || $CC -c examples/gpuir_impl.c -o $impl; } >$out/log 2>&1 &&
                $CC "$src" $impl -o $out/$name-$n $LIBSTB -lm -ldl -pthread >>$out/log 2>&1 &&
                timeout 60 $out/$name-$n >$out/run.log 2>&1
        else
            how="compiled"
            $CC -c "$src" -o $out/$name-$n.o >$out/log 2>&1
        fi
        if [ $? = 0 ]; then echo "PASS $label ($how)"
        else echo "FAIL $label (not $how)"; cat $out/log $out/run.log 2>/dev/null | sed -n '1,20p' >&2; fi
        rm -f $out/run.log
    done < <(extract "$md" "$name")
done
# Every ```mlir block is a module gpuir-opt parses, verifies and prints
# back the same (docs/text-format.md's first example returned two values
# from a function that declared one).
for md in README.md docs/*.md; do
    name=$(echo "$md" | tr '/.' '__')
    awk -v base="$out/$name-mlir" '/^```mlir$/ { n++; on = 1; f = base "-" n ".gir"; printf "" > f; next }
        /^```/ && on { on = 0; close(f); next } on { print > f }' "$md"
    for gir in "$out/$name"-mlir-*.gir; do
        [ -f "$gir" ] || continue
        n=${gir##*-}; n=${n%.gir}
        if [ ! -x tools/gpuir-opt ]; then echo "SKIP readme: $md mlir block $n (tools/gpuir-opt is not built)"
        elif tools/gpuir-opt --verify-roundtrip "$gir" >/dev/null 2>$out/log
        then echo "PASS readme: $md mlir block $n (parsed, verified, round trip)"
        else echo "FAIL readme: $md mlir block $n (gpuir-opt refused it)"; sed -n '1,10p' $out/log >&2; fi
        rm -f "$gir"
    done
done
grep -q '^```c$' README.md && echo "PASS readme: README.md has a C example" || echo "FAIL readme: README.md has no C example"
grep -q 'make test' README.md && echo "PASS readme: README.md shows make test" || echo "FAIL readme: no make test in README.md"
if grep -n '\.\./shared' README.md docs/*.md >$out/shared.log 2>/dev/null
then echo "FAIL readme: links to ../shared (not in the repository)"; cat $out/shared.log >&2
else echo "PASS readme: no links outside the repository"; fi
# Relative links resolve (docs/device-buffers.md comes with the device-buffer work).
bad=0
for md in README.md docs/*.md; do
    dir=$(dirname "$md")
    for link in $(grep -o '](\([^)#]*\)' "$md" | sed 's/^](//' | grep -v '^[a-z]*:' | sort -u); do
        [ -z "$link" ] && continue
        [ "$(basename "$link")" = device-buffers.md ] && continue
        [ -e "$dir/$link" ] || { echo "    $md: $link" >&2; bad=1; }
    done
done
[ $bad = 0 ] && echo "PASS readme: relative links resolve" || echo "FAIL readme: broken relative links"
# Every gpuir-bench subcommand is named where the tools are listed: the
# README's list and docs/tools.md's (they lacked attention and e2e).
bad=0
for sub in $(sed -n 's/.*strcmp(argv\[1\], "\([a-z0-9]*\)") == 0) return bench_.*/\1/p' tools/gpuir-bench.c); do
    grep -q "\`$sub\`" README.md || { echo "    README.md does not name gpuir-bench $sub" >&2; bad=1; }
    grep -q "gpuir-bench [a-z|]*\b$sub\b" docs/tools.md || { echo "    docs/tools.md's gpuir-bench line does not name $sub" >&2; bad=1; }
done
[ $bad = 0 ] && echo "PASS readme: every gpuir-bench subcommand is named in README.md and docs/tools.md" ||
    echo "FAIL readme: a gpuir-bench subcommand is missing from README.md or docs/tools.md"
# What the pages say of the header's length ("about N,000 lines") holds
# within a sixth (it said 16,000 for a header twice that).
lines=$(wc -l < gpuir.h)
bad=0
for f in README.md docs/*.md examples/gpuir_impl.c; do
    for k in $(tr '\n' ' ' < "$f" | grep -o 'about [0-9]*,000 lines' | grep -o '[0-9]*,' | tr -d ,); do
        said=$((k * 1000))
        [ $((said * 6)) -ge $((lines * 5)) ] && [ $((said * 6)) -le $((lines * 7)) ] ||
            { echo "    $f: about $k,000 lines; gpuir.h has $lines" >&2; bad=1; }
    done
done
[ $bad = 0 ] && echo "PASS readme: the header's length, where a page gives it, is right" ||
    echo "FAIL readme: a page gives the header's length wrong"
