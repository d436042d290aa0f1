#!/usr/bin/env bash
# Golden CUDA C: each tests/golden/NAME.gir, emitted with `gpuir-opt FLAGS
# --emit=cuda` (FLAGS: its `// GOLDEN:` line, e.g. `--lower --target=sm_80`,
# else --lower), must print tests/golden/NAME.cu byte for byte, from
# its first dense table or kernel on (the preludes and helpers before it are
# data, the same for every module). `--bless` rewrites the .cu files (`make
# bless`): commit them with the codegen change whose point they show.
# Then a lint over the goldens: no (void) leftovers, no conditions of
# constants, no doubled or redundant parentheses (`= ((a + b));`, `[((i))]`,
# `= (v2);`), no `0 +` or `/ 1` in indices. Prints a PASS/FAIL line per file and for the lint. TOOLS=dir
# picks gpuir-opt (default tools).
cd "$(dirname "$0")/.." || exit 1
opt=${TOOLS:-tools}/gpuir-opt
bless=0
[ "${1:-}" = --bless ] && bless=1
out=$(mktemp "${TMPDIR:-/tmp}/gpuir-golden-XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT

emit() {  # emit FILE.gir: the kernels' CUDA C, after the preludes
    local flags
    flags=$(sed -n 's|^// GOLDEN: ||p' "$1")
    # shellcheck disable=SC2086
    "$opt" ${flags:---lower} --emit=cuda "$1" |
        awk '/^#ifndef GPUIR_(TABLE|WORKSPACE)$/ || /^\/\* @/ { on = 1 } on'
}

for gir in tests/golden/*.gir; do
    cu=${gir%.gir}.cu
    if ! emit "$gir" > "$out" || [ ! -s "$out" ]; then echo "FAIL golden: $gir does not emit"; continue; fi
    if [ $bless = 1 ]; then cp "$out" "$cu"; echo "PASS golden: blessed $cu"
    elif cmp -s "$out" "$cu"; then echo "PASS golden: $cu"
    else echo "FAIL golden: $cu differs (make bless rewrites it)"; diff -u "$cu" "$out" | sed -n '1,40p' >&2
    fi
done

lint='\(void\)|if \(-?[0-9]+(LL|u)? *(<|>|<=|>=|==|!=) *-?[0-9]+(LL|u)?\)|= \(\(.*\)\);|\[\(\(|= \([A-Za-z_][A-Za-z_0-9]*\);|\(0 \+ | / 1 %'
if [ $bless = 0 ]; then
    if grep -nE "$lint" tests/golden/*.cu > "$out"; then
        echo "FAIL golden: lint (leftovers, constant conditions or doubled parentheses)"; sed -n '1,10p' "$out" >&2
    else echo "PASS golden: lint"; fi
fi
