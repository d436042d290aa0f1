#!/bin/sh
# The differential fuzzer (tests/fuzz/fuzz_diff.c, docs/fuzzing.md): replays
# tests/fuzz/diff-corpus (each reproducer on the interpreter and the
# emulator, plain and under ASan+UBSan), then a short run from a fixed seed
# (FUZZ_DIFF_COUNT modules, default 12): no finding. Built by `make test`.
cd "$(dirname "$0")/.." || exit 1
count=${FUZZ_DIFF_COUNT:-12}
corpus=$(find tests/fuzz/diff-corpus -name '*.gir' | sort)
for bin in build/fuzz_diff build/asan/fuzz_diff; do
    if [ ! -x $bin ]; then echo "FAIL fuzz-diff: $bin is not built (make $bin)"; continue; fi
    [ -n "$corpus" ] || continue
    if ASAN_OPTIONS=exitcode=86 $bin --replay $corpus >build/fuzz-diff-replay.log 2>&1; then
        echo "PASS fuzz-diff replay ($bin): $(echo "$corpus" | wc -l) reproducers agree"
    else
        echo "FAIL fuzz-diff replay ($bin):"; grep -v '^PASS' build/fuzz-diff-replay.log | sed -n '1,20p' >&2
    fi
done
bin=build/fuzz_diff
[ -x $bin ] || exit 0
mkdir -p build/fuzz-diff-short
if $bin --seed=1 --count="$count" --out=build/fuzz-diff-short --quiet >build/fuzz-diff-short.log 2>&1; then
    echo "PASS fuzz-diff: $(tail -n 1 build/fuzz-diff-short.log | sed 's/^fuzz-diff: //')"
else
    echo "FAIL fuzz-diff: seeds 1..$count found a difference (reproducers in build/fuzz-diff-short/):"
    grep '^FINDING' build/fuzz-diff-short.log | sed -n '1,10p' >&2
fi
