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
trap 'rm -f "$out" "$out.names"' EXIT

emit() {  # emit FILE.gir: the kernels' CUDA C, after the preludes
    local flags
    flags=$(sed -n 's|^// GOLDEN: ||p' "$1")
    # shellcheck disable=SC2086
    "$opt" ${flags:---lower} --emit=cuda "$1" |
        awk '/^#ifndef GPUIR_(TABLE|WS_TICKET)$/ || /^\/\* @/ { on = 1 } on'
}

for gir in tests/golden/*.gir; do
    cu=${gir%.gir}.cu
    if ! emit "$gir" > "$out" || [ ! -s "$out" ]; then echo "FAIL golden: $gir does not emit"; continue; fi
    if [ $bless = 1 ]; then cp "$out" "$cu"; echo "PASS golden: blessed $cu"
    elif cmp -s "$out" "$cu"; then echo "PASS golden: $cu"
    else echo "FAIL golden: $cu differs (make bless rewrites it)"; diff -u "$cu" "$out" | sed -n '1,40p' >&2
    fi
done

# Kernel parameters have a namespace of their own: their names end in "_"
# (x_, out0_, x_d0_) and nothing else in a kernel does (no emitter local,
# keyword or prelude name), so no IR name can clash with a local. Checked
# over the goldens and tests/ir/codegen/param-names.gir (values named like
# every family's locals): inside each kernel, every name ending in "_" is
# one its signature declares.
names_lint() {  # names_lint FILE...: "file:line: name" for each stray name
    awk '
    /^GPUIR_KERNEL / {
        inside = 1; split("", declared)
        n = split($0, w, /[^A-Za-z0-9_]+/)
        for (i = 1; i <= n; i++) if (w[i] ~ /_$/) declared[w[i]] = 1
        next
    }
    /^}/ { inside = 0 }
    inside {
        line = $0; gsub(/\/\*.*\*\//, "", line); gsub(/"[^"]*"/, "", line)
        n = split(line, w, /[^A-Za-z0-9_]+/)
        for (i = 1; i <= n; i++) if (w[i] ~ /_$/ && !(w[i] in declared)) print FILENAME ":" FNR ": " w[i]
    }' "$@"
}
if [ $bless = 0 ]; then
    "$opt" --lower --emit=cuda tests/ir/codegen/param-names.gir > "$out.names" 2>&1
    if names_lint tests/golden/*.cu "$out.names" > "$out"; [ -s "$out" ]; then
        echo "FAIL golden: names ending in _ that are not the kernel's parameters"; sed -n '1,10p' "$out" >&2
    elif ! grep -q '^GPUIR_KERNEL' "$out.names"; then
        echo "FAIL golden: tests/ir/codegen/param-names.gir does not emit"; sed -n '1,10p' "$out.names" >&2
    else echo "PASS golden: parameter names"; fi
    rm -f "$out.names"
fi

lint='\(void\)|if \(-?[0-9]+(LL|u)? *(<|>|<=|>=|==|!=) *-?[0-9]+(LL|u)?\)|= \(\(.*\)\);|\[\(\(|= \([A-Za-z_][A-Za-z_0-9]*\);|\(0 \+ | / 1 %'
if [ $bless = 0 ]; then
    if grep -nE "$lint" tests/golden/*.cu > "$out"; then
        echo "FAIL golden: lint (leftovers, constant conditions or doubled parentheses)"; sed -n '1,10p' "$out" >&2
    else echo "PASS golden: lint"; fi
fi
