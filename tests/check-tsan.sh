#!/bin/sh
# The threaded test under ThreadSanitizer (build/tsan, made by `make tsan`),
# several times over: contexts in parallel threads, emulated kernels run as
# fibers (announced to TSan), one disk cache. Any report fails it.
cd "$(dirname "$0")/.." || exit 1
t=build/tsan/tests/test_threads
[ -x $t ] || { echo "FAIL tsan: $t is not built (make tsan)"; exit 0; }
reps=${GPUIR_TSAN_REPEAT:-5}
i=0
while [ $i -lt "$reps" ]; do
    if ! TSAN_OPTIONS="halt_on_error=1 exitcode=66" $t >build/tsan.log 2>&1 || ! grep -q '^PASS ' build/tsan.log; then
        echo "FAIL tsan: test_threads (repetition $((i + 1)))"; sed -n '1,40p' build/tsan.log >&2; exit 0
    fi
    i=$((i + 1))
done
echo "PASS tsan: test_threads, $reps repetitions"
