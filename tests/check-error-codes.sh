#!/bin/sh
# Every error code in GPUIR_RESULT_TABLE is asserted by name (GPUIR_ERR_X)
# in at least one C test under tests/api.
cd "$(dirname "$0")/.." || exit 1
codes=$(sed -n '/define GPUIR_RESULT_TABLE/,/^$/p' gpuir.h | sed -n 's/^ *X(\(ERR_[A-Z_]*\),.*/\1/p')
[ -n "$codes" ] || { echo "FAIL error-codes: no codes found in gpuir.h"; exit 0; }
for c in $codes; do
    if grep -rqw "GPUIR_$c" tests/api; then echo "PASS error-codes: GPUIR_$c has a test"
    else echo "FAIL error-codes: GPUIR_$c has no test in tests/api"; fi
done
