#!/bin/sh
# tools/gpu-check.sh's bench part under GPU_CHECK_DEADLINE, with stub
# programs (GPU_CHECK_BIN) in place of the real ones, so no GPU is needed:
# no bench line starts past the deadline (each is named "not run"), and a
# line that would run past it is stopped there.
cd "$(dirname "$0")/.." || exit 1
dir=build/check-gpu-check
rm -rf "$dir"
mkdir -p "$dir/bin"
for p in test_backends test_mma_layouts seed_matmul gpuir-run device_buffers test_device_buffers; do
    printf '#!/bin/sh\nexit 0\n' > "$dir/bin/$p"
done
# gpuir-bench: "slow" sleeps a minute, anything else answers at once
printf '#!/bin/sh\ncase "$*" in *slow*) exec sleep 60 ;; esac\necho "bench stub $*"\n' > "$dir/bin/gpuir-bench"
chmod +x "$dir/bin"/*
run() {  # run DEADLINE LINES: the bench part's output
    OUT=$dir/out GPU_CHECK_BIN=$dir/bin GPU_CHECK_PARTS=bench GPU_CHECK_COMPILE=0 \
        GPU_CHECK_DEADLINE=$1 GPU_CHECK_BENCH=$2 tools/gpu-check.sh 2>/dev/null | grep '^gpuir-bench '
}
lines=$(printf 'launch\ne2e\nmatmul')
ok=1
got=$(run 0 "$lines")
[ "$(echo "$got" | grep -c 'not run (GPU_CHECK_DEADLINE=0 s reached)$')" = 3 ] || ok=0
got=$(run 600 "$lines")
[ "$(echo "$got" | grep -c ': exit 0$')" = 3 ] || ok=0
t0=$(date +%s)
got=$(run 15 "$(printf 'launch\nslow\nmatmul')")   # slow starts well before 15 s, even on a busy machine
t1=$(date +%s)
echo "$got" | grep -q '^gpuir-bench launch: exit 0$' || ok=0
echo "$got" | grep -q '^gpuir-bench slow: exit 124$' || ok=0       # stopped at the deadline
echo "$got" | grep -q '^gpuir-bench matmul: not run' || ok=0
[ $((t1 - t0)) -lt 40 ] || ok=0
if [ $ok = 1 ]; then echo "PASS gpu-check: GPU_CHECK_DEADLINE skips and cuts bench lines"
else
    echo "FAIL gpu-check: GPU_CHECK_DEADLINE"
    echo "$got" >&2
fi
