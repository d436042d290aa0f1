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
# The last line is "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
pass=0 fail=0 skip=0
mkdir -p build/shims
shims=$PWD/build/shims
if command -v FileCheck-14 >/dev/null 2>&1; then ln -sf "$(command -v FileCheck-14)" "$shims/FileCheck"
elif command -v FileCheck >/dev/null 2>&1; then ln -sf "$(command -v FileCheck)" "$shims/FileCheck"; fi
# Sanitizer reports exit with 86, which `not` (like LLVM's) does not accept,
# and neither does it accept a crash (a signal).
export ASAN_OPTIONS=exitcode=86 LSAN_OPTIONS=exitcode=86 UBSAN_OPTIONS=print_stacktrace=1
printf '#!/bin/sh\n"$@"\nrc=$?\n[ $rc -ne 0 ] && [ $rc -lt 128 ] && [ $rc -ne 86 ]\n' > "$shims/not"
chmod +x "$shims/not"

result() {  # result PASS|FAIL|SKIP name [detail-file]
    echo "$1 $2"
    case $1 in
        PASS) pass=$((pass + 1)) ;;
        SKIP) skip=$((skip + 1)) ;;
        *) fail=$((fail + 1)); [ -n "${3:-}" ] && sed -n '1,40p' "$3" | sed 's/^/    /' ;;
    esac
}

# Runs a program that prints PASS/FAIL/SKIP lines; a crash counts as a failure.
run_cases() {  # run_cases prefix program...
    local prefix=$1; shift
    local out=build/run.out err=build/run.err rc
    "$@" >"$out" 2>"$err"; rc=$?
    local p f s
    p=$(grep -c '^PASS ' "$out"); f=$(grep -c '^FAIL ' "$out"); s=$(grep -c '^SKIP ' "$out")
    sed -n 's#^\(PASS\|FAIL\|SKIP\) #\1 '"$prefix"'#p' "$out"
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
    if [ "$f" -gt 0 ]; then sed -n '1,40p' "$err" | sed 's/^/    /'; fi
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then result FAIL "$prefix$(basename "$1") (exit $rc)" "$err"; fi
}

# One text test: every RUN line of the file must succeed.
run_lit() {  # run_lit bindir file
    local bindir=$1 file=$2 err=build/lit.err cmd ok=1
    while IFS= read -r cmd; do
        cmd=${cmd//%s/$file}
        PATH="$bindir:$shims:$PATH" bash -o pipefail -c "$cmd" >/dev/null 2>"$err" || { ok=0; break; }
    done < <(sed -n 's|^// RUN: ||p' "$file")
    if [ $ok = 1 ]; then result PASS "$bindir: $file"; else result FAIL "$bindir: $file" "$err"; fi
}

gir_files=$(find tests -name '*.gir' | sort)
[ $# -eq 0 ] && set -- tools build/asan
for bindir in "$@"; do
    testdir=$bindir/tests
    [ "$bindir" = tools ] && testdir=build/tests
    if [ ! -x "$bindir/gpuir-opt" ]; then result FAIL "$bindir: not built (run make)"; continue; fi
    for t in "$testdir"/test_*; do
        [ -x "$t" ] && run_cases "$bindir: " "$t"
    done
    # every backend program again, recorded as a graph and replayed
    [ -x "$testdir/test_backends" ] && GPUIR_TEST_GRAPHS=1 GPUIR_TEST_BACKENDS=emu \
        run_cases "$bindir: " "$testdir/test_backends"
    for f in $gir_files; do
        grep -q '^// RUN: ' "$f" && run_lit "$bindir" "$f"
        if ! grep -q 'RUN: not ' "$f"; then
            if "$bindir/gpuir-opt" --split-input-file --verify-roundtrip "$f" >/dev/null 2>build/rt.err
            then result PASS "$bindir: roundtrip $f"; else result FAIL "$bindir: roundtrip $f" build/rt.err; fi
        fi
    done
done
for s in tests/check-*.sh; do
    [ -x "$s" ] && run_cases "" "$s"
done
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
