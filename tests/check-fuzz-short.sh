#!/bin/sh
# A short libFuzzer run of each harness (FUZZ_SHORT_SECONDS each, default
# 15) on a scratch copy of its corpus: what CI can afford of a campaign.
# New inputs stay in build/; a crash fails with the reproducer's path (add
# it to the corpus once fixed). The harnesses come from `make test`.
cd "$(dirname "$0")/.." || exit 1
seconds=${FUZZ_SHORT_SECONDS:-15}
short() {  # short name binary corpus-dir [extra flags...]
    name=$1 bin=$2 corpus=$3; shift 3
    if [ ! -x "$bin" ]; then echo "FAIL $name: $bin is not built (make $bin; it needs clang)"; return; fi
    work=build/$name-short
    rm -rf "$work" && mkdir -p "$work" && cp "$corpus"/* "$work"/
    log=build/$name-short.log
    if "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 -artifact_prefix=build/$name-short- \
        "$@" "$work" >"$log" 2>&1; then
        execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log")
        echo "PASS $name: ${seconds} s of libFuzzer, ${execs:-?} executions, no crash"
    else
        echo "FAIL $name: libFuzzer found a crash or a report"; grep -m1 -A12 'ERROR\|runtime error' "$log" >&2
        ls build/$name-short-* >&2 2>/dev/null
    fi
}
short fuzz-parse build/fuzz_parse tests/fuzz/corpus -dict=tests/fuzz/gir.dict
short fuzz-builder build/fuzz_builder tests/fuzz/builder-corpus
