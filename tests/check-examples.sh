#!/bin/sh
# The examples build (make all) and run: hello_jit (`make run`) JIT-compiled
# on the GPU or the emulator, saying which, with the results the README
# shows; the MLP on the interpreter, the seed
# matmul on the GPU or, without one, on the emulator at a smaller shape, the
# dynamic-batch layer at three batch sizes from one compiled program, the
# device-buffer application (64 steps on the device, nothing copied, checked
# against the interpreter).
cd "$(dirname "$0")/.." || exit 1
for ex in hello_jit mlp seed_matmul dynamic_batch device_buffers; do
    if [ ! -x examples/$ex ]; then echo "FAIL examples: $ex is not built"; continue; fi
    if examples/$ex > build/example-$ex.log 2>&1; then echo "PASS examples: $ex runs"
    else echo "FAIL examples: $ex"; sed -n '1,20p' build/example-$ex.log >&2; fi
done
grep -q "^ran on: \(cuda\|emu\)" build/example-hello_jit.log 2>/dev/null &&
    grep -q "^kernel: gpuir_k_layer_k0, fusing: matmul add relu$" build/example-hello_jit.log &&
    grep -q "^y\[0\] = \[4.5, 0\]$" build/example-hello_jit.log && grep -q "^y\[1\] = \[10.5, 1\]$" build/example-hello_jit.log &&
    echo "PASS examples: hello_jit says where it ran, fuses the layer into one kernel, gets 4.5 0 10.5 1" ||
    echo "FAIL examples: hello_jit did not print the backend, the fused kernel and the expected numbers"
grep -q "^run 2: .*sampled error" build/example-seed_matmul.log 2>/dev/null &&
    echo "PASS examples: seed_matmul ran twice and checked its samples" ||
    echo "FAIL examples: seed_matmul did not report two checked runs"
[ "$(grep -c "matches the interpreter" build/example-dynamic_batch.log 2>/dev/null)" = 3 ] &&
    grep -q "compiled or loaded from the disk cache 1 time" build/example-dynamic_batch.log &&
    grep -q "^refused: launching @layer_k0: dynamic sizes disagree: matmul" build/example-dynamic_batch.log &&
    echo "PASS examples: dynamic_batch ran three sizes on one module and refused a mismatch" ||
    echo "FAIL examples: dynamic_batch did not report three sizes, one module and a refusal"
grep -q "^64 steps: 0 bytes to the device, 0 back during the runs" build/example-device_buffers.log 2>/dev/null &&
    grep -q "^ok: matches the interpreter" build/example-device_buffers.log &&
    echo "PASS examples: device_buffers kept its data on the device and matched the interpreter" ||
    echo "FAIL examples: device_buffers did not report 64 steps with no copies, checked"
# docs/device-buffers.md: its C program builds warning-free and runs.
mkdir -p build/docs
awk '/^```c$/{on=1; next} /^```$/{if (on) exit} on' docs/device-buffers.md > build/docs/device-buffers.c
STB=$(pkg-config --cflags stb 2>/dev/null || echo -I/usr/include/stb)
LIBSTB=$(pkg-config --libs stb 2>/dev/null || echo -lstb)
if [ -s build/docs/device-buffers.c ] &&
   ${CC:-cc} -std=c99 -Wall -Wextra -Wpedantic -Werror -I. $STB build/docs/device-buffers.c \
      -o build/docs/device-buffers $LIBSTB -lm -ldl 2>build/docs/device-buffers.log &&
   build/docs/device-buffers >> build/docs/device-buffers.log 2>&1 &&
   grep -q ', 0 bytes copied by the runs' build/docs/device-buffers.log
then echo "PASS examples: the program in docs/device-buffers.md builds, runs and copies nothing"
else echo "FAIL examples: docs/device-buffers.md's program"; cat build/docs/device-buffers.log >&2; fi
