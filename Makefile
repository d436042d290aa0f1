# gpuir: `make` builds the tools, the examples and the tests; `make test` runs
# every test twice (plain and under ASan+UBSan); `make run` runs
# examples/hello_jit (JIT-compiled on the GPU, else on the CPU emulator).
# Build in parallel on every core; `make -j1` overrides it.
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
CC      ?= cc
CXX     ?= c++
CFLAGS  ?= -O2 -g
PREFIX  ?= /usr/local
WARN    = -std=c99 -Wall -Wextra -Wpedantic -Werror
# Recursive variables: evaluated after `deps` has installed stb if needed.
STB_CFLAGS = $(shell pkg-config --cflags stb 2>/dev/null || echo -I/usr/include/stb)
STB_LIBS   = $(shell pkg-config --libs stb 2>/dev/null || echo -lstb)
LIBS    = $(STB_LIBS) -lm -ldl -pthread
SAN     = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
TSAN    = -O1 -g -fsanitize=thread

TOOLS     = tools/gpuir-opt tools/gpuir-run tools/gpuir-bench
EXAMPLES  = examples/hello_jit examples/mlp examples/seed_matmul examples/dynamic_batch examples/device_buffers
TEST_SRCS = $(wildcard tests/api/*.c)
TESTS     = $(patsubst tests/api/%.c,build/tests/%,$(TEST_SRCS))
ASAN      = $(patsubst tools/%,build/asan/%,$(TOOLS)) \
            $(patsubst tests/api/%.c,build/asan/tests/%,$(TEST_SRCS)) build/asan/fuzz_replay \
            build/asan/fuzz_builder_replay build/asan/fuzz_diff
# The implementation (19k lines, the slow part) is compiled once per
# configuration into build/gpuir_impl.o (plain) and build/asan/gpuir_impl.o;
# a test or tool links it unless its source defines GPUIR_IMPLEMENTATION
# itself (it reaches into internal statics or replaces the allocator).
OWN_IMPL  := $(shell grep -l '^.define GPUIR_IMPLEMENTATION$$' tests/api/*.c tools/*.c)
LINKED    := $(filter-out $(OWN_IMPL),$(TEST_SRCS) $(TOOLS:%=%.c))
IMPL_OBJ  = build/gpuir_impl.o
ASAN_OBJ  = build/asan/gpuir_impl.o
PLAIN_LINKED = $(patsubst tests/api/%.c,build/tests/%,$(filter tests/%,$(LINKED))) \
               $(patsubst %.c,%,$(filter tools/%,$(LINKED))) examples/hello_jit build/fuzz_diff
ASAN_LINKED  = $(patsubst tests/api/%.c,build/asan/tests/%,$(filter tests/%,$(LINKED))) \
               $(patsubst tools/%.c,build/asan/%,$(filter tools/%,$(LINKED))) \
               build/asan/fuzz_replay build/asan/fuzz_builder_replay build/asan/fuzz_diff
$(PLAIN_LINKED): $(IMPL_OBJ)
$(PLAIN_LINKED): IMPL = $(IMPL_OBJ)
$(ASAN_LINKED): $(ASAN_OBJ)
$(ASAN_LINKED): IMPL = $(ASAN_OBJ)
FUZZ_SECONDS ?= 60
FUZZ_SEED    ?= $(shell date +%s)

all: $(TOOLS) $(EXAMPLES) $(TESTS) build/fake/libcuda.so

# A fake CUDA driver (tests/fake/libcuda.c) the tests load through
# GPUIR_CUDA_LIBRARY: a device, a context that takes a while, no GPU.
build/fake/libcuda.so: tests/fake/libcuda.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) -fPIC -shared $< -o $@ -pthread

deps:
	@tools/ensure-deps.sh

tools/%: tools/%.c tools/cli.h gpuir.h | deps
	$(CC) $(WARN) $(CFLAGS) $(STB_CFLAGS) $< $(IMPL) -o $@ $(LIBS)

examples/%: examples/%.c gpuir.h | deps
	$(CC) $(WARN) $(CFLAGS) $(STB_CFLAGS) $< -o $@ $(LIBS)

# The implementation compiled once in its own translation unit (the slow
# part), from examples/gpuir_impl.c; hello_jit, the tests and the tools link
# against it and rebuild in a moment.
$(IMPL_OBJ): examples/gpuir_impl.c gpuir.h | deps
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) $(STB_CFLAGS) -c $< -o $@

$(ASAN_OBJ): examples/gpuir_impl.c gpuir.h | deps
	@mkdir -p $(@D)
	$(CC) $(WARN) $(SAN) $(STB_CFLAGS) -c $< -o $@

examples/hello_jit: examples/hello_jit.c gpuir.h | deps
	$(CC) $(WARN) $(CFLAGS) $(STB_CFLAGS) $< $(IMPL) -o $@ $(LIBS)

build/tests/%: tests/api/%.c gpuir.h tests/check.h | deps
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) $(STB_CFLAGS) $< $(IMPL) -o $@ $(LIBS)

build/asan/%: tools/%.c tools/cli.h gpuir.h | deps
	@mkdir -p $(@D)
	$(CC) $(WARN) $(SAN) $(STB_CFLAGS) $< $(IMPL) -o $@ $(LIBS)

build/asan/tests/%: tests/api/%.c gpuir.h tests/check.h | deps
	@mkdir -p $(@D)
	$(CC) $(WARN) $(SAN) $(STB_CFLAGS) $< $(IMPL) -o $@ $(LIBS)

build/asan/fuzz_replay: tests/fuzz/fuzz_parse.c tests/fuzz/fuzz_common.h gpuir.h | deps
	@mkdir -p $(@D)
	$(CC) $(WARN) $(SAN) -DGPUIR_FUZZ_REPLAY $(STB_CFLAGS) $< $(IMPL) -o $@ $(LIBS)

build/asan/fuzz_builder_replay: tests/fuzz/fuzz_builder.c tests/fuzz/fuzz_common.h gpuir.h | deps
	@mkdir -p $(@D)
	$(CC) $(WARN) $(SAN) -DGPUIR_FUZZ_REPLAY $(STB_CFLAGS) $< $(IMPL) -o $@ $(LIBS)

# The differential fuzzer (interpreter vs emulator): a plain program, no libFuzzer.
build/fuzz_diff: tests/fuzz/fuzz_diff.c gpuir.h | deps
	@mkdir -p $(@D)
	$(CC) $(WARN) -O1 -g $(STB_CFLAGS) $< $(IMPL) -o $@ $(LIBS)

build/asan/fuzz_diff: tests/fuzz/fuzz_diff.c gpuir.h | deps
	@mkdir -p $(@D)
	$(CC) $(WARN) $(SAN) $(STB_CFLAGS) $< $(IMPL) -o $@ $(LIBS)

# The libFuzzer harnesses: the implementation instrumented for coverage once.
FUZZ_SAN = -g -O1 -fno-sanitize-recover=all
build/fuzz/gpuir_impl.o: examples/gpuir_impl.c gpuir.h | deps
	@mkdir -p $(@D)
	clang $(FUZZ_SAN) -fsanitize=fuzzer-no-link,address,undefined $(STB_CFLAGS) -c $< -o $@

build/fuzz_builder: tests/fuzz/fuzz_builder.c tests/fuzz/fuzz_common.h build/fuzz/gpuir_impl.o | deps
	@mkdir -p $(@D)
	clang $(FUZZ_SAN) -fsanitize=fuzzer,address,undefined $(STB_CFLAGS) $< build/fuzz/gpuir_impl.o -o $@ $(LIBS)

build/fuzz_parse: tests/fuzz/fuzz_parse.c tests/fuzz/fuzz_common.h build/fuzz/gpuir_impl.o | deps
	@mkdir -p $(@D)
	clang $(FUZZ_SAN) -fsanitize=fuzzer,address,undefined $(STB_CFLAGS) $< build/fuzz/gpuir_impl.o -o $@ $(LIBS)

asan: $(ASAN)

# The threaded test under ThreadSanitizer (tests/check-tsan.sh runs it).
build/tsan/gpuir_impl.o: examples/gpuir_impl.c gpuir.h | deps
	@mkdir -p $(@D)
	$(CC) $(WARN) $(TSAN) $(STB_CFLAGS) -c $< -o $@

build/tsan/tests/%: tests/api/%.c gpuir.h tests/check.h build/tsan/gpuir_impl.o | deps
	@mkdir -p $(@D)
	$(CC) $(WARN) $(TSAN) $(STB_CFLAGS) $< build/tsan/gpuir_impl.o -o $@ $(LIBS)

tsan: build/tsan/tests/test_threads

# Fuzzes the parser, passes and interpreter for FUZZ_SECONDS; new inputs go
# to build/fuzz-corpus, crashes to build/crash-*. Add each crash to
# tests/fuzz/corpus once fixed: `make test` replays that corpus.
fuzz: build/fuzz_parse
	@mkdir -p build/fuzz-corpus
	build/fuzz_parse -max_total_time=$(FUZZ_SECONDS) -dict=tests/fuzz/gir.dict \
	    -rss_limit_mb=2048 -timeout=5 -artifact_prefix=build/ \
	    build/fuzz-corpus tests/fuzz/corpus tests/ir

# The builder harness: bytes as builder calls. Crashes go to
# build/crash-*; add each to tests/fuzz/builder-corpus once fixed.
fuzz-builder: build/fuzz_builder
	@mkdir -p build/fuzz-builder-corpus
	build/fuzz_builder -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=5 \
	    -artifact_prefix=build/ build/fuzz-builder-corpus tests/fuzz/builder-corpus

# The differential fuzzer for FUZZ_SECONDS from FUZZ_SEED (default: the
# time): random valid programs on the interpreter and the emulator. Findings
# (minimized) go to build/fuzz-diff-SEED.gir; add each to
# tests/fuzz/diff-corpus once fixed (docs/fuzzing.md).
fuzz-diff: build/fuzz_diff
	nice -n 5 build/fuzz_diff --seconds=$(FUZZ_SECONDS) --seed=$(FUZZ_SEED) --out=build --quiet

# The libFuzzer harnesses (clang); tests/check-fuzz-short.sh runs each briefly.
fuzzers: build/fuzz_parse build/fuzz_builder

# One make builds everything (in parallel, clang's harnesses too), then the
# runner runs it; the runner's second-to-last line gives the wall time since
# `make test` started (GPUIR_TEST_STARTED), the build's part included.
test:
	@start=$$(date +%s); tools/ensure-deps.sh --tests && \
	$(MAKE) --no-print-directory all asan tsan build/fuzz_diff fuzzers && \
	GPUIR_TEST_STARTED=$$start tests/run.sh tools build/asan

# Rewrites the golden CUDA C (tests/golden/*.cu) from what codegen emits now;
# tests/check-golden.sh (part of make test) compares them.
bless: tools/gpuir-opt
	tests/check-golden.sh --bless

run: examples/hello_jit
	./examples/hello_jit

gpuir.pc: gpuir.pc.in Makefile
	sed -e 's|@PREFIX@|$(PREFIX)|' -e "s|@VERSION@|$$(sed -n 's/^#define GPUIR_VERSION_STRING "\(.*\)"/\1/p' gpuir.h)|" $< > $@

install: $(TOOLS) gpuir.pc
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 gpuir.h $(DESTDIR)$(PREFIX)/include/gpuir.h
	install -m 644 gpuir.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/gpuir.pc
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf build $(TOOLS) $(EXAMPLES) examples/gpuir_impl.o gpuir.pc

.PHONY: all deps asan tsan fuzz fuzz-builder fuzz-diff fuzzers test bless run install clean
.DELETE_ON_ERROR:
