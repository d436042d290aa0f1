#!/bin/sh
# gpuir-bench's CPU-side subcommands run and print their machine-readable
# lines: launch (on the emulator without a GPU), passes, matmul --epilogue, e2e, and --plot, which
# draws a PNG when gnuplot is installed and otherwise says that it needs it.
cd "$(dirname "$0")/.." || exit 1
bench=tools/gpuir-bench
mkdir -p build
out=build/check-bench.out
if $bench launch --kernels=6 --repeat=3 > $out 2>&1 &&
   grep -q '^bench launch backend=[a-z]* kernels=6 gpuir_us=[0-9.]* graph_us=[0-9.]* raw_us=' $out
then echo "PASS bench: launch prints plain and graph-replay figures"
else echo "FAIL bench: launch"; cat $out >&2; fi
rm -f build/check-bench.png
$bench passes --ops=200,400 --repeat=1 --plot=build/check-bench.png > $out 2>&1
rc=$?
if ! grep -q '^bench passes ops=400 verify=1 ' $out; then echo "FAIL bench: passes"; cat $out >&2
elif command -v gnuplot >/dev/null 2>&1; then
    if [ $rc -eq 0 ] && head -c 4 build/check-bench.png | grep -q PNG
    then echo "PASS bench: --plot draws a PNG"
    else echo "FAIL bench: --plot (exit $rc)"; cat $out >&2; fi
elif [ $rc -eq 1 ] && grep -q 'plot needs gnuplot' $out; then echo "PASS bench: --plot says it needs gnuplot"
else echo "FAIL bench: --plot without gnuplot (exit $rc)"; cat $out >&2; fi
# matmul_case WHAT 'emu line' 'gpu line' [options]: gpuir-bench matmul with
# the options exits 0 and prints the emulator's line (no GPU) or the GPU's.
matmul_case() {
    what=$1 emu=$2 gpu=$3
    shift 3
    $bench matmul "$@" > $out 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -q -e "$emu" -e "$gpu" $out
    then echo "PASS bench: matmul $what"
    else echo "FAIL bench: matmul $what (exit $rc)"; cat $out >&2; fi
}
# matmul --epilogue: without a GPU the fused kernel runs on the emulator,
# through the program and launched alone with the arguments placed as the
# GPU path places them, against the interpreter (with one, a small shape).
for dt in f32 bf16; do
    matmul_case "$dt with a fused bias, gelu and residual" \
        "^emu $dt .*epilogue bias,gelu,residual: matches the interpreter (run, and kernel launched alone)" \
        "^bench matmul $dt m=200 n=136 k=72 epilogue=bias,gelu,residual " \
        --dtype=$dt --m=200 --n=136 --k=72 --epilogue=bias,gelu,residual
done
# --wgmma (experimental): B stored N x K, the opt-in wgmma kernel (the
# emulator's portable wgmma without a GPU).
matmul_case "--wgmma bf16 with a fused bias, gelu and residual" \
    "^emu bf16-wgmma .*epilogue bias,gelu,residual: matches the interpreter (run, and kernel launched alone)" \
    "^bench matmul bf16-wgmma m=200 n=136 k=72 epilogue=bias,gelu,residual " \
    --dtype=bf16 --wgmma --m=200 --n=136 --k=72 --epilogue=bias,gelu,residual
# The bf16 default on sm_90 (wgmma reading B as it is: one kernel; with N
# not a multiple of 8, B transposed by a kernel first: both run, below),
# --no-wgmma (mma.sync), and --form naming a kernel (one run per
# candidate); a form the target cannot run fails, saying why.
matmul_case "bf16 with B staged (N = 132)" \
    "^emu bf16 200 x 132 x 72.*matches the interpreter (run, and kernel launched alone) (2 kernels: an operand transposed first)" \
    "^bench matmul bf16 m=200 n=132 k=72 .*kernels=2" \
    --dtype=bf16 --m=200 --n=132 --k=72
for args in "|" "--no-wgmma|" "--form=mma_sync.128x128x32.s3|" \
            "--form=plain.64x64x16|" "--form=wgmma.128x256x64.s4|" "--form=wgmma.128x128x64.s6.persistent|" \
            "--wgmma --form=wgmma.128x256x64.s4.persistent|" "--form=wgmma.128x256x64.s4.persistent.c2|" \
            "--form=wgmma.128x128x64.s6.persistent.c2|"; do
    flags=${args%%|*} want=${args#*|}
    # shellcheck disable=SC2086
    $bench matmul --dtype=bf16 --m=200 --n=136 --k=72 $flags > $out 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -q -e "^emu bf16.*matches the interpreter (run, and kernel launched alone).*$want" \
                           -e "^bench matmul bf16.* m=200 n=136 k=72 " $out &&
       { [ -n "$flags" ] || ! grep -q "2 kernels\|kernels=2" $out; }      # the default: one kernel
    then echo "PASS bench: matmul bf16 ${flags:-(default)}"
    else echo "FAIL bench: matmul bf16 ${flags:-(default)} (exit $rc)"; cat $out >&2; fi
done
# --form with a list: each form at the shape in one run (no GPU: each on the
# emulator), `default` configure's own; a bad list is refused.
$bench matmul --dtype=bf16 --form=wgmma.128x256x64.s4.persistent,default,wgmma.128x256x64.s4.persistent.c2 > $out 2>&1
rc=$?
if [ $rc -eq 0 ] && { [ "$(grep -c '^emu bf16.*matches the interpreter (run, and kernel launched alone)' $out)" = 3 ] &&
                      grep -q '^emu bf16 form wgmma.128x256x64.s4.persistent.c2 ' $out &&
                      grep -q '^emu bf16 200 x 136 x 72' $out ||
                      [ "$(grep -c '^bench matmul bf16 ' $out)" = 15 ]; }
then echo "PASS bench: matmul --form with a list runs each form"
else echo "FAIL bench: matmul --form with a list (exit $rc)"; cat $out >&2; fi
for bad in "a,,b" "a,b,c,d,e,f,g,h,i" ","; do
    if ! $bench matmul --form=$bad > $out 2>&1 && grep -q 'takes up to 8 names, comma-separated, none empty' $out
    then echo "PASS bench: matmul --form=$bad is refused"
    else echo "FAIL bench: matmul --form=$bad is refused"; cat $out >&2; fi
done
# TF32 on wgmma by form: A rounded, B transposed and rounded, each in a
# kernel before the matmul (three kernels, two temporaries, all launched
# alone as the GPU path times them).
for form in wgmma.128x128x32.s6 wgmma.128x256x32.s4.persistent wgmma.128x256x32.s4.persistent.c2; do
    matmul_case "tf32 --form=$form" \
        "^emu tf32 form $form .*matches the interpreter (run, and kernel launched alone) (3 kernels: operands staged first)" \
        "^bench matmul tf32 .*kernels=3" \
        --dtype=tf32 --form=$form
done
# A stored K x M (transpose_a): transposed by a kernel first by default;
# a wgmma form reads it M-major in the one kernel.
for args in "|2" "--form=wgmma.128x256x64.s4.persistent|1"; do
    flags=${args%%|*} kernels=${args#*|}
    # shellcheck disable=SC2086
    $bench matmul --dtype=bf16 --transpose-a $flags > $out 2>&1
    rc=$?
    if [ "$kernels" = 2 ]; then counted="(2 kernels: an operand transposed first)\|kernels=2$"
    else counted="alone) (correctness only\|kernels=1$"; fi
    if [ $rc -eq 0 ] && grep -q -e "^emu bf16-ta.*matches the interpreter (run, and kernel launched alone)" \
                           -e "^bench matmul bf16-ta " $out && grep -q "$counted" $out
    then echo "PASS bench: matmul bf16 --transpose-a ${flags:-(default)}"
    else echo "FAIL bench: matmul bf16 --transpose-a ${flags:-(default)} (exit $rc)"; cat $out >&2; fi
done
if ! $bench matmul --dtype=f32 --m=64 --n=64 --k=64 --form=wgmma.128x128x64.s6 > $out 2>&1 &&
   grep -q 'cannot run on sm_90: wgmma needs f16 or bf16 operands' $out
then echo "PASS bench: matmul --form the target cannot run fails, saying why"
else echo "FAIL bench: matmul f32 --form=wgmma.128x128x64.s6"; cat $out >&2; fi
# A skinny matmul (M = 32: 2 tiles for 132 SMs) is split along K: both
# kernels (the partial products, then their sum with the epilogue) run
# and are launched alone, and the output says split-K is in use.
for args in "bf16 1024 bias,gelu,residual" "f32 512 bias,relu"; do
    set -- $args
    matmul_case "$1 32 x 256 x $2 split along K" \
        "^emu $1 32 x 256 x $2, epilogue $3: matches the interpreter (run, and kernel launched alone) (split-K: [0-9]* slices, 2 kernels)" \
        "^bench matmul $1 m=32 n=256 k=$2 epilogue=$3 .* k_slices=[1-9]" \
        --dtype=$1 --m=32 --n=256 --k=$2 --epilogue=$3
done
if ! $bench matmul --epilogue=bias,relu,gelu > $out 2>&1 && grep -q 'epilogue takes a list' $out
then echo "PASS bench: matmul --epilogue refuses two activations"
else echo "FAIL bench: matmul --epilogue=bias,relu,gelu was accepted"; cat $out >&2; fi
# --k-slices: each count splits the matmul so (the plan's S), `default`
# as the split-k pass decides (64 x 64 x 64: whole); 1 is refused.
$bench matmul --k-slices=default,2,5 > $out 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c 'matches the interpreter (run, and kernel launched alone)' $out)" = 3 ] &&
   grep -q '^emu f32 64 x 64 x 64, .*alone) (correctness' $out &&
   grep -q '^emu f32 64 x 64 x 104, .*(split-K: 2 slices, 2 kernels)' $out &&
   grep -q '^emu f32 64 x 64 x 296, .*(split-K: 5 slices, 2 kernels)' $out
then echo "PASS bench: matmul --k-slices=default,2,5 splits each so"
else echo "FAIL bench: matmul --k-slices=default,2,5 (exit $rc)"; cat $out >&2; fi
$bench matmul --k-slices=2,1 > $out 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- '--k-slices takes up to 8 counts' $out
then echo "PASS bench: matmul --k-slices=2,1 is refused"
else echo "FAIL bench: matmul --k-slices=2,1 was accepted (exit $rc)"; cat $out >&2; fi
# e2e: both programs, four modes each, results checked (against the
# interpreter without a GPU); device mode moves no bytes either way.
$bench e2e --small --repeat=2 > $out 2>&1
rc=$?
n=$(grep -c '^bench e2e program=[a-z]* mode=[a-z-]* ms=[0-9.na]* kernel_ms=[0-9.]* ratio=[0-9.na]* h2d_bytes=[0-9]* d2h_bytes=[0-9]*$' $out)
if [ $rc -eq 0 ] && [ "$n" = 8 ] && ! grep -q WRONG $out &&
   [ "$(grep -c '^bench e2e program=[a-z]* mode=device ms=.* h2d_bytes=0 d2h_bytes=0$' $out)" = 2 ] &&
   [ "$(grep -c ' pageable .* B in, .* B out per run: \(matches\|the reference\)' $out)" = 2 ]
then echo "PASS bench: e2e prints four modes of two programs, device mode copies nothing"
else echo "FAIL bench: e2e (exit $rc, $n lines)"; cat $out >&2; fi
# bandwidth: without a GPU the memory-bound programs run on the emulator
# (small shapes) against the interpreter; LayerNorm and RMSNorm, f32 and
# bf16, and the two long-row LayerNorms are one row kernel each.
$bench bandwidth --repeat=1 > $out 2>&1
rc=$?
n=$(grep -c -e '^\(LayerNorm\|RMSNorm\) [0-9x]*, \(f32\|bf16\) *emu: matches the interpreter, 1 kernel$' \
            -e '^bench bandwidth \(LayerNorm\|RMSNorm\) [0-9]*x[0-9]*, \(f32\|bf16\) kernels=1 ' $out)
if [ $rc -eq 0 ] && [ "$n" = 6 ]
then echo "PASS bench: bandwidth runs LayerNorm and RMSNorm as one kernel each"
else echo "FAIL bench: bandwidth (exit $rc, $n norm lines)"; cat $out >&2; fi
# bandwidth --rows: only the rows named (case ignored), on the emulator or
# the GPU; a pattern no row's label holds is an error that lists them.
$bench bandwidth --repeat=1 --rows=GEMMA,gated > $out 2>&1
rc=$?
n=$(grep -c -e ' emu: matches the interpreter, 1 kernel$' -e '^bench bandwidth .* kernels=1 ' $out)
if [ $rc -eq 0 ] && [ "$n" = 2 ] && [ "$(grep -c -i -e 'gemma' -e 'gated' $out)" = 2 ] && ! grep -q 'LayerNorm' $out
then echo "PASS bench: bandwidth --rows=GEMMA,gated runs those two rows only"
else echo "FAIL bench: bandwidth --rows=GEMMA,gated (exit $rc, $n rows)"; cat $out >&2; fi
$bench bandwidth --rows=no-such-row > $out 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--rows=no-such-row: no row's label holds" $out && grep -q '^  sibling reductions ' $out
then echo "PASS bench: bandwidth --rows picking no row exits 2 and lists the rows"
else echo "FAIL bench: bandwidth --rows=no-such-row (exit $rc)"; cat $out >&2; fi
# attention: without a GPU a small fused attention (causal and not) runs on
# the emulator against the interpreter (the line `emu` matches); with one,
# the two rows at seq 64 (the line `gpu` matches), one fused kernel each.
attention_case() {  # attention_case WHAT 'emu line' 'gpu line' [options]
    what=$1 emu=$2 gpu=$3
    shift 3
    $bench attention --seq=64 --repeat=2 "$@" > $out 2>&1
    rc=$?
    if [ $rc -eq 0 ] && { [ "$(grep -c "$emu" $out)" = 2 ] || [ "$(grep -c "$gpu" $out)" = 2 ]; }
    then echo "PASS bench: attention $what"
    else echo "FAIL bench: attention $what (exit $rc)"; cat $out >&2; fi
}
row='^bench attention bf16 causal=[01] kernels=1 fused_ms='
attention_case "(one fused kernel, causal and not)" \
    '^attention 1x2x130x128 bf16 .* emu: matches the interpreter$' "$row"
attention_case "--kv-heads=4 (grouped-query, one fused kernel)" \
    '^attention 1x2x130x128 bf16 .* kv heads 1 emu: matches the interpreter$' "$row.* kv_heads=4\$" --kv-heads=4
attention_case "--form=attention.fa2_wgmma.m128 (scores on wgmma)" \
    '^attention 1x2x130x128 bf16 .* form attention.fa2_wgmma.m128 emu: matches the interpreter$' \
    "$row.* form=attention.fa2_wgmma.m128 " --form=attention.fa2_wgmma.m128
attention_case "--head-dim=80 (one fused kernel)" \
    '^attention 1x2x130x80 bf16 .* emu: matches the interpreter$' "$row" --head-dim=80
attention_case "--head-dim=40 (padded to 48: one fused kernel)" \
    '^attention 1x2x130x40 bf16 .* emu: matches the interpreter$' "$row" --head-dim=40
attention_case "--dtype=f32 --head-dim=72 (the f32 kernel: one fused kernel)" \
    '^attention 1x2x130x72 f32 .* emu: matches the interpreter$' '^bench attention f32 causal=[01] kernels=1 fused_ms=' \
    --dtype=f32 --head-dim=72
attention_case "--layout=bshd (heads split and merged by transposes: one fused kernel)" \
    '^attention 1x2x130x128 bf16 .* layout bshd emu: matches the interpreter$' "$row.* layout=bshd\$" --layout=bshd
$bench attention --head-dim=20 > $out 2>&1
if [ $? -eq 2 ] && grep -q 'the bf16 kernel takes multiples of 8 up to 256 (f32: 1 to 256)' $out
then echo "PASS bench: attention --head-dim=20 in bf16 is refused"
else echo "FAIL bench: attention --head-dim=20 in bf16"; cat $out >&2; fi
$bench attention --kv-heads=3 > $out 2>&1
if [ $? -eq 2 ] && grep -q 'does not divide the 16 query heads' $out
then echo "PASS bench: attention --kv-heads=3 is refused"
else echo "FAIL bench: attention --kv-heads=3"; cat $out >&2; fi
