#!/bin/sh
# The examples build (make all) and run: the MLP on the interpreter, the seed
# matmul on the GPU or, without one, on the emulator at a smaller shape.
cd "$(dirname "$0")/.." || exit 1
for ex in mlp seed_matmul; do
    if [ ! -x examples/$ex ]; then echo "FAIL examples: $ex is not built"; continue; fi
    if examples/$ex > build/example-$ex.log 2>&1; then echo "PASS examples: $ex runs"
    else echo "FAIL examples: $ex"; sed -n '1,20p' build/example-$ex.log >&2; fi
done
grep -q "^run 2: .*sampled error" build/example-seed_matmul.log 2>/dev/null &&
    echo "PASS examples: seed_matmul ran twice and checked its samples" ||
    echo "FAIL examples: seed_matmul did not report two checked runs"
