#!/bin/sh
# Replays the fuzz corpus and every test program through the fuzz harness
# built with ASan+UBSan (build/asan/fuzz_replay), and the builder corpus
# through the builder harness: no crash, no report.
cd "$(dirname "$0")/.." || exit 1
bin=build/asan/fuzz_replay
[ -x $bin ] || { echo "FAIL fuzz: $bin is not built (make asan)"; exit 0; }
files=$(find tests/fuzz/corpus tests/ir -type f | sort)
if ASAN_OPTIONS=exitcode=86 $bin $files >build/fuzz-replay.log 2>&1; then
    echo "PASS fuzz: replayed $(echo "$files" | wc -l) inputs"
else
    echo "FAIL fuzz: replay crashed or reported"; sed -n '1,30p' build/fuzz-replay.log >&2
fi
bin=build/asan/fuzz_builder_replay
[ -x $bin ] || { echo "FAIL fuzz-builder: $bin is not built (make asan)"; exit 0; }
files=$(find tests/fuzz/builder-corpus -type f | sort)
if ASAN_OPTIONS=exitcode=86 $bin $files >build/fuzz-builder-replay.log 2>&1; then
    echo "PASS fuzz-builder: replayed $(echo "$files" | wc -l) inputs"
else
    echo "FAIL fuzz-builder: replay crashed or reported"; sed -n '1,30p' build/fuzz-builder-replay.log >&2
fi
