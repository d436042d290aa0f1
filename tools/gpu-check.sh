#!/bin/sh
# On a machine with an NVIDIA GPU: builds the backend tests and gpuir-bench,
# runs every test program on CUDA, then under compute-sanitizer's memcheck
# (with leak check), racecheck, initcheck and synccheck, then the seed
# example and the compile (by phase, NVRTC's own phases; and a process
# from start to its first seed-matmul result, cold and warm), matmul (f32, tf32, f16, bf16; f32 and bf16 also
# with a fused bias, gelu and residual; f16 and bf16 as the default takes
# them (on sm_90: wgmma reading B as it is stored, 128x256 tiles on a
# persistent grid where they fill the SMs), with --no-wgmma (mma.sync) and
# with --wgmma (B stored transposed), the wgmma kernel's other variants
# (--form) and the f32 variants; two
# skinny shapes that split K; against cuBLAS),
# bandwidth (an elementwise chain, a row softmax, transposes, LayerNorm and
# RMSNorm in f32 and bf16, over static and `?` rows, cosine with its
# products first, the sibling reductions, against a device copy), launch and end-to-end (e2e: host
# pageable, pinned, device buffers, a captured graph) and fused attention
# (against torch SDPA where installed) benchmarks; the device-buffer test and example;
# the backend tests run once more recording and replaying graphs. Logs go to $OUT (default build/gpu-check); a summary is printed.
#   [GPU_CHECK_PARTS="tests sanitizer bench"] tools/gpu-check.sh [STB_INCLUDE_DIR]
# GPU_CHECK_PARTS picks the parts to run (default the first three), so that a
# machine lent with a time limit per command can run one part a call:
# tests (CUDA, then with graphs, the tensor-core layout probes and the seed
# example), sanitizer, bench
# (GPU_CHECK_BENCH, below, picks the benchmarks; GPU_CHECK_DEADLINE ends
# them in time), and profile (not by
# default: Nsight Compute's full set on the kernels of the wgmma variants
# and the wgmma attention at 4096, $OUT/ncu-NAME.txt, beside the profiles
# in ../shared/perf/h100-2026-11-24/; GPU_CHECK_PROFILE picks them).
# Without libstb on the machine, pass a directory holding stb_ds.h: gpuir
# then compiles stb_ds itself.
cd "$(dirname "$0")/.." || exit 1
started=$(date +%s)
OUT=${OUT:-build/gpu-check}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
if [ -n "${1:-}" ]; then STB="-I$1 -DGPUIR_STB_DS_IMPLEMENTATION"; LIBSTB=""
else STB=$(pkg-config --cflags stb 2>/dev/null || echo -I/usr/include/stb); LIBSTB=$(pkg-config --libs stb 2>/dev/null || echo -lstb); fi
cc="${CC:-cc} -std=c99 -O2 -g -pthread $STB"
# The programs, built here unless GPU_CHECK_BIN names a folder that holds
# them (built on another x86-64 machine: the lent GPU's time is short).
# Sources that define GPUIR_IMPLEMENTATION compile it themselves; the
# others link one build of examples/gpuir_impl.c. Built in parallel.
PROGRAMS="tests/api/test_backends.c tests/api/test_mma_layouts.c tools/gpuir-bench.c examples/seed_matmul.c
tools/gpuir-run.c examples/device_buffers.c tests/api/test_device_buffers.c"
if [ -n "${GPU_CHECK_BIN:-}" ]; then
    for src in $PROGRAMS; do
        [ -x "$GPU_CHECK_BIN/$(basename "$src" .c)" ] || { echo "gpu-check: $GPU_CHECK_BIN/$(basename "$src" .c) is missing"; exit 1; }
        cp "$GPU_CHECK_BIN/$(basename "$src" .c)" "$OUT/"
    done
else
    $cc -c examples/gpuir_impl.c -o "$OUT/gpuir_impl.o" || exit 1
    for src in $PROGRAMS; do
        impl="$OUT/gpuir_impl.o"
        grep -q '^#define GPUIR_IMPLEMENTATION$' "$src" && impl=""
        $cc "$src" $impl -o "$OUT/$(basename "$src" .c)" $LIBSTB -lm -ldl &
    done
    wait
    for src in $PROGRAMS; do
        [ -x "$OUT/$(basename "$src" .c)" ] || { echo "gpu-check: $src did not build"; exit 1; }
    done
fi
PARTS=${GPU_CHECK_PARTS:-tests sanitizer bench}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
git log -1 --format='commit %h %cd' 2>/dev/null
# test_backends on CUDA, each test file in a process of its own under a
# time limit (GPU_CHECK_TEST_TIMEOUT seconds, default 120: a kernel that
# never finishes costs that file, not the run; it is named TIMEOUT with
# the last function that passed), GPU_CHECK_JOBS files at once (default:
# the cores). backends_per_file LOG [VAR=VALUE...]
JOBS=${GPU_CHECK_JOBS:-$(nproc 2>/dev/null || echo 1)}
backends_per_file() {
    log=$1; shift
    ls tests/ir/ref/*.gir tests/ir/codegen/*.gir tests/ir/run/*.gir | xargs -P "$JOBS" -I{} \
        env GPUIR_TEST_BACKENDS=cuda "$@" sh -c 'f=$1; l=$2.$(echo "$f" | tr / _)
            timeout -k 5 "$3" "$4" "$f" > "$l" 2>&1
            rc=$?; [ $rc -ge 124 ] && echo "TIMEOUT cuda: $f (exit $rc after $3 s; last: $(tail -1 "$l"))" >> "$l"
            exit 0' sh {} "$log" "${GPU_CHECK_TEST_TIMEOUT:-120}" "$OUT/test_backends"
    cat "$log".tests_* > "$log"; rm -f "$log".tests_*
}
if part tests; then
backends_per_file "$OUT/cuda.txt"
echo "cuda: $(grep -c '^PASS' "$OUT/cuda.txt") passed, $(grep -c '^FAIL' "$OUT/cuda.txt") failed, $(grep -c '^SKIP' "$OUT/cuda.txt") skipped, $(grep -c '^TIMEOUT' "$OUT/cuda.txt") timed out"
grep '^FAIL\|^TIMEOUT' "$OUT/cuda.txt" | head -20
backends_per_file "$OUT/cuda-graphs.txt" GPUIR_TEST_GRAPHS=1
"$OUT/test_mma_layouts" > "$OUT/mma-layouts.txt" 2>&1
echo "mma layouts: $(grep -c '^PASS' "$OUT/mma-layouts.txt") passed, $(grep -c '^FAIL' "$OUT/mma-layouts.txt") failed"
grep -A8 '^FAIL\|probe' "$OUT/mma-layouts.txt" | head -40
echo "cuda+graphs: $(grep -c '^PASS' "$OUT/cuda-graphs.txt") passed, $(grep -c '^FAIL' "$OUT/cuda-graphs.txt") failed, $(grep -c '^TIMEOUT' "$OUT/cuda-graphs.txt") timed out"
grep '^FAIL\|^TIMEOUT' "$OUT/cuda-graphs.txt" | head -20
# The wgmma files' emulator runs again on CUDA, each under the test time
# limit: the variants, TF32 through bulk copies, A read M-major and the
# clusters (not yet run on a GPU), the --sm-count ones making each block
# (cluster) walk several tiles (test_backends runs them at the device's own
# count, where few tiles walk).
for f in tests/ir/run/wgmma-clusters.gir tests/ir/run/wgmma-tf32.gir tests/ir/run/wgmma-a-m-major.gir \
         tests/ir/run/wgmma-variants.gir; do
    sed -n 's|^// RUN: gpuir-run %s \(.*\) --backend=emu\(.*\)$|\1\2|p' $f |
    while IFS= read -r args; do
        # shellcheck disable=SC2086
        timeout -k 5 "${GPU_CHECK_TEST_TIMEOUT:-120}" "$OUT/gpuir-run" $f $args --backend=cuda > "$OUT/wgmma-run.txt" 2>&1
        echo "$(basename $f) $args: exit $? $(grep -m1 -E 'matches|differ|error' "$OUT/wgmma-run.txt")"
    done
done
"$OUT/seed_matmul" > "$OUT/seed-matmul.txt" 2>&1
echo "examples/seed_matmul: exit $?"; grep -E '^(backend|run)' "$OUT/seed-matmul.txt"
"$OUT/device_buffers" > "$OUT/device-buffers.txt" 2>&1
echo "examples/device_buffers: exit $?"; cat "$OUT/device-buffers.txt"
"$OUT/test_device_buffers" > "$OUT/test-device-buffers.txt" 2>&1
echo "test_device_buffers: $(grep -c '^PASS' "$OUT/test-device-buffers.txt") passed, $(grep -c '^FAIL' "$OUT/test-device-buffers.txt") failed, $(grep -c '^SKIP' "$OUT/test-device-buffers.txt") skipped"
grep -B3 '^FAIL' "$OUT/test-device-buffers.txt" | head -20
fi
if ! part sanitizer; then :
elif command -v compute-sanitizer >/dev/null 2>&1; then
    for tool in memcheck racecheck initcheck synccheck; do
        extra=""; [ $tool = memcheck ] && extra="--leak-check full"
        GPUIR_TEST_BACKENDS=cuda compute-sanitizer --tool $tool $extra --error-exitcode 9 \
            "$OUT/test_backends" > "$OUT/sanitizer-$tool.txt" 2>&1
        echo "compute-sanitizer $tool: exit $? ($(grep -c '^PASS' "$OUT/sanitizer-$tool.txt") passed; $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.txt" | tr '\n' ' '))"
    done
else
    echo "compute-sanitizer: not found"
fi
if part profile; then
if command -v ncu >/dev/null 2>&1; then
    # NAME|gpuir-bench arguments, one a line: two launches of gpuir's
    # kernels after the first (a transpose kernel, where B is staged, and
    # the kernel; or the kernel twice), with clocks as they are.
    PROFILES=${GPU_CHECK_PROFILE:-"bf16-default|matmul --dtype=bf16 --m=4096 --n=4096 --k=4096 --repeat=3
f32-default|matmul --m=4096 --n=4096 --k=4096 --repeat=3
bf16-wgmma|matmul --dtype=bf16 --wgmma --m=4096 --n=4096 --k=4096 --repeat=3
bf16-wgmma-persistent|matmul --dtype=bf16 --wgmma --m=4096 --n=4096 --k=4096 --repeat=3 --form=wgmma.128x128x64.s6.persistent
bf16-wgmma-256|matmul --dtype=bf16 --wgmma --m=4096 --n=4096 --k=4096 --repeat=3 --form=wgmma.128x256x64.s4
bf16-wgmma-256-persistent|matmul --dtype=bf16 --wgmma --m=4096 --n=4096 --k=4096 --repeat=3 --form=wgmma.128x256x64.s4.persistent
bf16-wgmma-b-n-major|matmul --dtype=bf16 --m=4096 --n=4096 --k=4096 --repeat=3 --form=wgmma.128x128x64.s6
bf16-wgmma-256-persistent-c2|matmul --dtype=bf16 --m=4096 --n=4096 --k=4096 --repeat=3 --form=wgmma.128x256x64.s4.persistent.c2
f32-256|matmul --m=4096 --n=4096 --k=4096 --repeat=3 --form=register_tiled.256x128x8.s2
attention-wgmma-s|attention --seq=4096 --repeat=3 --form=attention.fa2_wgmma.m128
attention-wgmma|attention --seq=4096 --repeat=3 --form=attention.wgmma.m128
attention-f32|attention --dtype=f32 --seq=2048 --repeat=3"}
    echo "$PROFILES" | while IFS='|' read -r name args; do
        [ -n "$name" ] || continue
        # shellcheck disable=SC2086
        ncu --kernel-name regex:gpuir_k --launch-skip 1 --launch-count 2 --set full --clock-control none \
            "$OUT/gpuir-bench" $args > "$OUT/ncu-$name.txt" 2>&1
        echo "ncu $name: exit $?; $(grep -E '^ +(Duration|Compute \(SM\) Throughput|Registers Per Thread) ' "$OUT/ncu-$name.txt" | tr -s ' ' | tr '\n' ';')"
    done
else
    echo "profile: ncu not found"
fi
fi
part bench || exit 0
# GPU_CHECK_COMPILE=0 leaves out the compile and process start-up timings.
if [ "${GPU_CHECK_COMPILE:-1}" != 0 ]; then
for f in tests/bench/seed_matmul.gir tests/bench/seed_matmul_bf16.gir tests/bench/elementwise.gir; do
    "$OUT/gpuir-bench" compile $f > "$OUT/bench-compile-$(basename $f .gir).txt" 2>&1
    grep -v '^bench ' "$OUT/bench-compile-$(basename $f .gir).txt"
done
# Process start to the first seed-matmul result, cold (an empty cache
# directory: NVRTC runs) then warm (the same directory): examples/seed_matmul
# (backend AUTO: the CUDA context is made before compiling; its "program
# ready" and "run 1" lines) and gpuir-run --backend=cuda (the context is made
# on a thread while NVRTC compiles), each as a whole process, wall time.
for tool in seed_matmul gpuir-run; do
    jit_cache=$(mktemp -d)
    for mode in cold warm; do
        t0=$(date +%s%N)
        if [ $tool = seed_matmul ]; then
            GPUIR_CACHE_DIR=$jit_cache "$OUT/seed_matmul" > "$OUT/jit-$tool-$mode.txt" 2>&1
        else
            GPUIR_CACHE_DIR=$jit_cache "$OUT/gpuir-run" --backend=cuda tests/bench/seed_matmul.gir > "$OUT/jit-$tool-$mode.txt" 2>&1
        fi
        rc=$?
        t1=$(date +%s%N)
        echo "$tool process, $mode cache: exit $rc, $(( (t1 - t0) / 1000000 )) ms in all; $(grep -E '^(backend|run 1)' "$OUT/jit-$tool-$mode.txt" | tr '\n' ' ')"
    done
    rm -rf "$jit_cache"
done
fi
# GPU_CHECK_BENCH: the gpuir-bench command lines to run, one a line
# (default: all of them below).
# In the order of what is least known (what the last lease, an H200 on
# 2026-12-04, did not measure first): the defaults as switched after it,
# issue 21's norms and losses over 16384 x 4096 and a total of rows of
# 768 (`--rows`: that lease's whole `bandwidth` line ran past its
# limit), the fused epilogues, f16, the skinny shapes, the other
# memory-bound rows and attention, then the variants it compared.
BENCHES=${GPU_CHECK_BENCH:-"matmul --dtype=bf16
bandwidth --rows=16384x4096,65536x768
matmul
matmul --dtype=f16
matmul --dtype=bf16 --epilogue=bias,gelu,residual
matmul --epilogue=bias,gelu,residual
matmul --dtype=bf16 --m=32 --n=4096 --k=4096 --form=default,mma_sync.128x128x32.s3
matmul --dtype=bf16 --m=256 --n=256 --k=16384 --form=default,mma_sync.128x128x32.s3
matmul --m=256 --n=256 --k=16384
matmul --m=256 --n=256 --k=16384 --k-slices=default,16,32,64
matmul --m=256 --n=256 --k=16384 --form=register_tiled.128x128x16.s2 --k-slices=default,32,64
matmul --dtype=bf16 --m=1024 --n=1024 --k=16384 --k-slices=default,2,4
matmul --dtype=bf16 --m=1024 --n=1024 --k=1024 --k-slices=default,2
matmul --dtype=bf16 --m=32 --n=4096 --k=4096 --k-slices=default,2,8,16
matmul --dtype=tf32
matmul --dtype=tf32 --form=wgmma.128x128x32.s6
matmul --dtype=tf32 --form=wgmma.128x256x32.s4.persistent
matmul --dtype=bf16 --transpose-a
matmul --dtype=bf16 --transpose-a --form=wgmma.128x256x64.s4.persistent
matmul --dtype=bf16 --form=wgmma.128x256x64.s4.persistent,wgmma.128x256x64.s4.persistent.c2
matmul --dtype=f16 --form=wgmma.128x256x64.s4.persistent,wgmma.128x256x64.s4.persistent.c2
bandwidth
attention
attention --form=attention.fa2_wgmma.m128
attention --form=attention.wgmma.m128
attention --kv-heads=4
attention --layout=bshd
attention --head-dim=80
attention --head-dim=40
attention --head-dim=256
attention --head-dim=256 --form=attention.fa2.m64
attention --dtype=f32
attention --dtype=f32 --head-dim=64
attention --form=attention.fa2_wgmma.m128 --kv-heads=4
attention --form=attention.fa2_wgmma.m64 --head-dim=64
attention --form=attention.wgmma.m128 --kv-heads=4
attention --form=attention.wgmma.m64 --head-dim=64
launch
e2e
matmul --dtype=bf16 --form=wgmma.128x128x64.s6
matmul --dtype=bf16 --form=wgmma.128x128x64.s6.persistent
matmul --dtype=bf16 --form=wgmma.128x256x64.s4
matmul --dtype=bf16 --form=wgmma.128x128x64.s6.persistent.c2
matmul --dtype=tf32 --form=wgmma.128x256x32.s4.persistent.c2
matmul --dtype=bf16 --wgmma
matmul --dtype=bf16 --wgmma --epilogue=bias,gelu,residual
matmul --form=register_tiled.128x128x16.s2
matmul --dtype=f16 --no-wgmma
matmul --dtype=bf16 --no-wgmma"}
# GPU_CHECK_DEADLINE=S: no bench line starts once S seconds have passed
# since the script started, and none runs past it (its limit is cut to
# what is left), so that a call under a device's per-command limit ends
# with its lines printed; each line not run is named ("not run"), for the
# next call's GPU_CHECK_BENCH.
echo "$BENCHES" | while IFS= read -r b; do
    [ -n "$b" ] || continue
    log="$OUT/bench-$(echo $b | tr -c 'a-z0-9\n' '-').txt"
    limit=${GPU_CHECK_BENCH_TIMEOUT:-120}
    if [ -n "${GPU_CHECK_DEADLINE:-}" ]; then
        left=$((GPU_CHECK_DEADLINE - ($(date +%s) - started)))
        if [ "$left" -lt 5 ]; then echo "gpuir-bench $b: not run (GPU_CHECK_DEADLINE=$GPU_CHECK_DEADLINE s reached)"; continue; fi
        [ "$left" -lt "$limit" ] && limit=$left
    fi
    # shellcheck disable=SC2086
    timeout "$limit" "$OUT/gpuir-bench" $b > "$log" 2>&1
    echo "gpuir-bench $b: exit $?"
    grep -v '^bench ' "$log"
done
# Fused attention against torch's scaled_dot_product_attention on the same
# GPU (batch 8, heads 16, sequence 4096, head dim 128, bf16, causal and
# not), when torch with CUDA is installed; gpuir's rows are in
# bench-attention.txt (fused kernel against the unfused three kernels).
case "$BENCHES" in *attention*)
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    python3 - > "$OUT/sdpa.txt" 2>&1 <<'PY'
import torch, torch.nn.functional as F
def bench(label, q, k, v, **kw):   # median of 20 after 3 warm-ups, causal and not
    for causal in (False, True):
        for _ in range(3): F.scaled_dot_product_attention(q, k, v, is_causal=causal, **kw)
        times = []
        for _ in range(20):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); F.scaled_dot_product_attention(q, k, v, is_causal=causal, **kw); b.record(); b.synchronize()
            times.append(a.elapsed_time(b))
        ms = sorted(times)[len(times) // 2]
        flops = 4 * 8 * 16 * 4096 * 4096 * 128 * (0.5 if causal else 1.0)
        print("bench %s causal=%d torch=%s ms=%.4f tflops=%.1f" % (label, causal, torch.__version__, ms, flops / ms / 1e9))
q, k, v = (torch.randn(8, 16, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
bench("sdpa bf16", q, k, v)
k4, v4 = (torch.randn(8, 4, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
try:                                      # grouped-query: 4 key/value heads for the 16 query heads
    bench("sdpa-gqa bf16", q, k4, v4, enable_gqa=True)
except TypeError:
    print("sdpa-gqa: this torch has no enable_gqa")
del q, k, v, k4, v4
q, k, v = (torch.randn(8, 16, 4096, 128, device="cuda", dtype=torch.float32) for _ in range(3))
bench("sdpa f32", q, k, v)                # torch's memory-efficient kernel; gpuir's attention.simt.m64
PY
    cat "$OUT/sdpa.txt"
    # sdpa_ratio CAUSAL DTYPE BENCH-FILE SDPA-LABEL WHAT [NOTE]: gpuir's fused time from BENCH-FILE
    # against torch's for SDPA-LABEL in sdpa.txt, one line, where both were measured
    sdpa_ratio() {
        g=$(sed -n "s/^bench attention $2 causal=$1 .* fused_ms=\([0-9.]*\).*/\1/p" "$3" 2>/dev/null || true)
        t=$(sed -n "s/^bench $4 causal=$1 .* ms=\([0-9.]*\).*/\1/p" "$OUT/sdpa.txt")
        if [ -n "$g" ] && [ -n "$t" ]; then
            awk -v g="$g" -v t="$t" -v c="$1" -v what="$5" -v note="${6:-}" \
                'BEGIN { printf "%s causal=%d: gpuir %.3f ms, torch SDPA %.3f ms: gpuir at %.2fx SDPA'"'"'s time%s\n", what, c, g, t, g / t, note }'
        fi
    }
    for c in 0 1; do
        sdpa_ratio $c bf16 "$OUT/bench-attention.txt" "sdpa bf16" "attention" " (target <= 1.5)"
        sdpa_ratio $c bf16 "$OUT/bench-attention---form-attention-fa2-wgmma-m128.txt" "sdpa bf16" "attention (scores on wgmma)"
        sdpa_ratio $c bf16 "$OUT/bench-attention---form-attention-wgmma-m128.txt" "sdpa bf16" "attention (both products on wgmma)"
        sdpa_ratio $c bf16 "$OUT/bench-attention---layout-bshd.txt" "sdpa bf16" "attention [B, S, H, D] (heads split by transposes)"
        sdpa_ratio $c bf16 "$OUT/bench-attention---kv-heads-4.txt" "sdpa-gqa bf16" "attention, 4 kv heads,"
        sdpa_ratio $c f32 "$OUT/bench-attention---dtype-f32.txt" "sdpa f32" "attention f32"
    done
else
    echo "attention: torch with CUDA is not installed: the SDPA comparison is skipped (gpuir's fused kernel is compared with its unfused program above)"
fi ;;
esac
