#!/usr/bin/env bash
# The test runner. From the repository root, after `make all asan`:
#   tests/run.sh [BINDIR...]     (default: tools build/asan)
# Runs, for each BINDIR (a normal and a sanitized build):
#   - the C tests (build/tests/test_* or BINDIR/tests/test_*): PASS/FAIL/SKIP lines,
#     and test_backends once more with GPUIR_TEST_GRAPHS=1;
#   - the text tests: each tests/**/*.gir `// RUN:` line through sh, with
#     FileCheck and `not` on PATH and %s the file;
#   - the round trip: gpuir-opt --verify-roundtrip over every .gir that parses;
# and once: every tests/check-*.sh script (PASS/FAIL/SKIP lines).
# Each of those is a job; GPUIR_TEST_JOBS of them (default: the number of
# cores) run at once, and their lines are printed in the order above.
# The last line is "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
mkdir -p build/shims
shims=$PWD/build/shims
if command -v FileCheck-14 >/dev/null 2>&1; then ln -sf "$(command -v FileCheck-14)" "$shims/FileCheck"
elif command -v FileCheck >/dev/null 2>&1; then ln -sf "$(command -v FileCheck)" "$shims/FileCheck"; fi
# Sanitizer reports exit with 86, which `not` (like LLVM's) does not accept,
# and neither does it accept a crash (a signal).
export ASAN_OPTIONS=exitcode=86 LSAN_OPTIONS=exitcode=86 UBSAN_OPTIONS=print_stacktrace=1
printf '#!/bin/sh\n"$@"\nrc=$?\n[ $rc -ne 0 ] && [ $rc -lt 128 ] && [ $rc -ne 86 ]\n' > "$shims/not"
chmod +x "$shims/not"
out=build/run
rm -rf "$out"
mkdir -p "$out"

result() {  # result PASS|FAIL|SKIP name [detail-file]
    echo "$1 $2"
    if [ "$1" = FAIL ] && [ -n "${3:-}" ]; then sed -n '1,40p' "$3" | sed 's/^/    /'; fi
}

# Runs a program that prints PASS/FAIL/SKIP lines; a crash counts as a failure.
run_cases() {  # run_cases prefix program...
    local prefix=$1; shift
    local o=$tmp.out e=$tmp.err rc
    "$@" >"$o" 2>"$e"; rc=$?
    sed -n 's#^\(PASS\|FAIL\|SKIP\) #\1 '"$prefix"'#p' "$o"
    if grep -q '^FAIL ' "$o"; then sed -n '1,40p' "$e" | sed 's/^/    /'
    elif [ $rc -ne 0 ]; then result FAIL "$prefix$(basename "$1") (exit $rc)" "$e"; fi
}

# Every backend program again, recorded as a graph and replayed.
graph_cases() {  # graph_cases prefix program
    export GPUIR_TEST_GRAPHS=1 GPUIR_TEST_BACKENDS=emu
    run_cases "$@"
}

# One text test: every RUN line of the file must succeed; then the round
# trip, unless it is an expected-error test.
run_gir() {  # run_gir bindir file
    local bindir=$1 file=$2 err=$tmp.err cmd ok=1
    if grep -q '^// RUN: ' "$file"; then
        while IFS= read -r cmd; do
            cmd=${cmd//%s/$file}
            PATH="$bindir:$shims:$PATH" bash -o pipefail -c "$cmd" >/dev/null 2>"$err" || { ok=0; break; }
        done < <(sed -n 's|^// RUN: ||p' "$file")
        if [ $ok = 1 ]; then result PASS "$bindir: $file"; else result FAIL "$bindir: $file" "$err"; fi
    fi
    if ! grep -q 'RUN: not ' "$file"; then
        if "$bindir/gpuir-opt" --split-input-file --verify-roundtrip "$file" >/dev/null 2>"$err"
        then result PASS "$bindir: roundtrip $file"; else result FAIL "$bindir: roundtrip $file" "$err"; fi
    fi
}

# Jobs: job N writes its lines to $out/N; they are printed in order as soon
# as every job before them has finished (it then writes $out/N.done).
njobs=0 printed=0 pass=0 fail=0 skip=0
max_jobs=${GPUIR_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
print_finished() {
    local f
    while [ $printed -lt $njobs ] && [ -e "$out/$printed.done" ]; do
        f=$out/$printed
        cat "$f"
        pass=$((pass + $(grep -c '^PASS ' "$f"))); fail=$((fail + $(grep -c '^FAIL ' "$f")))
        skip=$((skip + $(grep -c '^SKIP ' "$f")))
        printed=$((printed + 1))
    done
}
job() {  # job command...: runs it in the background, at most max_jobs at once
    while [ "$(jobs -rp | wc -l)" -ge "$max_jobs" ]; do wait -n; print_finished; done
    local n=$njobs
    ( tmp=$out/$n.tmp; "$@" >"$out/$n" 2>&1; rm -f "$tmp".*; touch "$out/$n.done" ) &
    njobs=$((njobs + 1))
    print_finished
}

gir_files=$(find tests -name '*.gir' | sort)
[ $# -eq 0 ] && set -- tools build/asan
for bindir in "$@"; do
    testdir=$bindir/tests
    [ "$bindir" = tools ] && testdir=build/tests
    if [ ! -x "$bindir/gpuir-opt" ]; then job result FAIL "$bindir: not built (run make)"; continue; fi
    for t in "$testdir"/test_*; do
        [ -x "$t" ] && job run_cases "$bindir: " "$t"
    done
    [ -x "$testdir/test_backends" ] && job graph_cases "$bindir: " "$testdir/test_backends"
    for f in $gir_files; do
        job run_gir "$bindir" "$f"
    done
done
for s in tests/check-*.sh; do
    [ -x "$s" ] && job run_cases "" "$s"
done
wait
print_finished
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
