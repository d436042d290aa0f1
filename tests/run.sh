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
# LeakSanitizer skips thread-local storage (its walk of it crashed now and
# then at exit after many NVRTC compiles; tests/lsan.supp says why that
# hides no gpuir leak).
export ASAN_OPTIONS=exitcode=86 UBSAN_OPTIONS=print_stacktrace=1
export LSAN_OPTIONS=exitcode=86:use_tls=0:suppressions=$PWD/tests/lsan.supp
printf '#!/bin/sh\n"$@"\nrc=$?\n[ $rc -ne 0 ] && [ $rc -lt 128 ] && [ $rc -ne 86 ]\n' > "$shims/not"
chmod +x "$shims/not"
out=build/run
rm -rf "$out"
mkdir -p "$out"
started=$(date +%s)
# One disk cache for the run, empty at its start: what one test compiles
# another may load (as on a user's machine), and no run depends on what an
# earlier one left in ~/.cache.
export GPUIR_CACHE_DIR=$PWD/$out/cache

result() {  # result PASS|FAIL|SKIP name [detail-file]
    echo "$1 $2"
    if [ "$1" = FAIL ] && [ -n "${3:-}" ]; then sed -n '1,40p' "$3" | sed 's/^/    /'; fi
}

# Runs a program that prints PASS/FAIL/SKIP lines; a crash counts as a failure.
# LeakSanitizer's own crash at exit (its tracer faulting while it walks the
# main thread's thread-local storage, seen now and then after a run of many
# NVRTC compiles: "LeakSanitizer has encountered a fatal error", no leak
# report) after every case passed runs the program once more, with a NOTE
# line; a second crash, or any leak report, fails.
run_cases() {  # run_cases prefix program...
    local prefix=$1; shift
    local o=$tmp.out e=$tmp.err rc
    "$@" >"$o" 2>"$e"; rc=$?
    if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$o" && grep -q 'LeakSanitizer has encountered a fatal error' "$e" &&
       ! grep -q 'ERROR: LeakSanitizer: detected memory leaks' "$e"; then
        echo "NOTE $prefix$(basename "$1"): LeakSanitizer crashed at exit (no leak report); run again"
        "$@" >"$o" 2>"$e"; rc=$?
    fi
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

# Jobs: queued (queue command...) in the order their lines are printed: job
# N writes them to $out/N, printed as soon as every job before it has
# finished (it then writes $out/N.done). They start longest first (by the
# CPU seconds of the last run, else by kind: expected_cost), GPUIR_TEST_JOBS
# of them at once (default: the number of cores), so that no long job
# starts last. Each records its CPU and wall seconds; build/test-times lists
# them, the costliest first, for the next run's order.
njobs=0 printed=0 pass=0 fail=0 skip=0
max_jobs=${GPUIR_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
times_file=build/test-times
declare -a job_cmd job_cost
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
# What a job is expected to cost (CPU seconds): the last run's figure, else
# one by kind (measured 2026-11-25): C tests and scripts cost tens of seconds,
# a text test well under one.
expected_cost() {  # expected_cost command-string
    local c
    c=$(awk -v k="$1" '{ cmd = $0; sub(/^[^ ]* [^ ]* /, "", cmd) } cmd == k { print $1; exit }' "$times_file" 2>/dev/null)
    if [ -n "$c" ]; then echo "$c"; return; fi
    case $1 in
        *check-valgrind.sh*) echo 300 ;;      # the longest job: start it first
        *test_runtime*|*check-header.sh*|*check-tsan.sh*|*test_faults*) echo 60 ;;
        run_cases*|graph_cases*) echo 20 ;;
        *) echo 1 ;;
    esac
}
queue() {  # queue command...
    job_cmd[njobs]=$(printf '%q ' "$@")
    job_cost[njobs]=$(expected_cost "${job_cmd[njobs]}")
    njobs=$((njobs + 1))
}
start() {  # start N: runs job N in the background, at most max_jobs at once
    local n=$1
    while [ "$(jobs -rp | wc -l)" -ge "$max_jobs" ]; do wait -n; print_finished; done
    ( tmp=$out/$n.tmp; t0=$(date +%s%N); eval "${job_cmd[n]}" >"$out/$n" 2>&1; rm -f "$tmp".*
      t1=$(date +%s%N)
      times > "$tmp.times"            # not in a pipe: that would be a child's times
      awk -v w=$(((t1 - t0) / 1000000)) -v k="${job_cmd[n]}" '{  # user and system, the shell and its children
          split($1 "" $2, t, /[ms]/); cpu += t[1] * 60 + t[2] + t[3] * 60 + t[4] }
          END { printf "%.2f %.2f %s\n", cpu, w / 1000, k }' "$tmp.times" > "$out/$n.time"
      rm -f "$tmp.times"
      touch "$out/$n.done" ) &
    print_finished
}
# Starts every queued job, the costliest first, and waits for them all.
start_all() {
    local n
    for n in $(for n in "${!job_cmd[@]}"; do echo "${job_cost[n]} $n"; done | sort -k1,1gr -k2,2n | cut -d' ' -f2); do
        start "$n"
    done
    wait
    print_finished
    cat "$out"/*.time 2>/dev/null | sort -k1,1gr > "$times_file"
}

gir_files=$(find tests -name '*.gir' | sort)
[ $# -eq 0 ] && set -- tools build/asan
for bindir in "$@"; do
    testdir=$bindir/tests
    [ "$bindir" = tools ] && testdir=build/tests
    if [ ! -x "$bindir/gpuir-opt" ]; then queue result FAIL "$bindir: not built (run make)"; continue; fi
    for t in "$testdir"/test_*; do
        [ -x "$t" ] && queue run_cases "$bindir: " "$t"
    done
    [ -x "$testdir/test_backends" ] && queue graph_cases "$bindir: " "$testdir/test_backends"
    for f in $gir_files; do
        queue run_gir "$bindir" "$f"
    done
done
for s in tests/check-*.sh; do
    [ -x "$s" ] && queue run_cases "" "$s"
done
start_all
now=$(date +%s)
if [ -n "${GPUIR_TEST_STARTED:-}" ]; then
    echo "wall time: $((now - GPUIR_TEST_STARTED)) s (build $((started - GPUIR_TEST_STARTED)) s, tests $((now - started)) s)"
else echo "wall time: $((now - started)) s"; fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
