#!/bin/sh
# A representative subset under valgrind memcheck (uninitialised reads and
# leaks that the sanitizers do not see): the C tests for the interpreter, the
# passes and the builder, and gpuir-opt on the printer tests.
cd "$(dirname "$0")/.." || exit 1
command -v valgrind >/dev/null 2>&1 || { echo "SKIP valgrind: not installed"; exit 0; }
vg="valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect"
# test_passes interprets the corpus before and after the passes: under
# valgrind only functions of tensors up to 4096 elements (the passes still
# run on every chunk; the plain and ASan runs compare up to 65536).
for t in test_ref test_passes test_builder test_npy; do
    if GPUIR_TEST_CORPUS_ELEMENTS=4096 $vg build/tests/$t >/dev/null 2>build/vg.log; then echo "PASS valgrind: $t"
    else echo "FAIL valgrind: $t"; sed -n '1,30p' build/vg.log >&2; fi
done
for f in tests/ir/print/*.gir tests/ir/passes/canonicalize.gir; do
    if $vg tools/gpuir-opt --split-input-file --passes=decompose,canonicalize $f >/dev/null 2>build/vg.log
    then echo "PASS valgrind: gpuir-opt $f"
    else echo "FAIL valgrind: gpuir-opt $f"; sed -n '1,30p' build/vg.log >&2; fi
done
