#!/usr/bin/env bash
# The tools' command lines (gpuir-opt, gpuir-run, gpuir-bench): --help (a
# line per flag, stdout, status 0), --version (the header's), unknown flags
# named (status 2), numbers checked whole, a parse error's source line and
# caret (control bytes escaped), unknown pass names, --emit=cuda without
# --lower, unbound globals, inline inputs (each fault named: rank, dims,
# dtype, values, range, type), .npy inputs (f64 and bool converted, in
# range; devices, FIFOs and malformed headers refused), no more --output
# than results, and functions of more than 64 parameters.
# Prints PASS/FAIL lines. TOOLS=dir picks the binaries (default tools).
cd "$(dirname "$0")/.." || exit 1
T=${TOOLS:-tools}
opt=$T/gpuir-opt run=$T/gpuir-run bench=$T/gpuir-bench
d=$(mktemp -d "${TMPDIR:-/tmp}/gpuir-cli-XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
version=$(sed -n 's/^#define GPUIR_VERSION_STRING "\(.*\)"/\1/p' gpuir.h)

check() {  # check NAME CONDITION-COMMAND...
    local name=$1; shift
    if "$@"; then echo "PASS cli: $name"; else echo "FAIL cli: $name"; sed -n '1,12p' "$d/err" "$d/out" >&2 2>/dev/null; fi
}
# runs a command: its stdout in $d/out, stderr in $d/err, status in $rc
go() { "$@" >"$d/out" 2>"$d/err"; rc=$?; }
has() { grep -q -e "$2" "$d/$1"; }

# ---- help and version ----
for tool in opt run bench; do
    go "${!tool}" --help
    check "gpuir-$tool --help: a line per flag on stdout, status 0" \
        eval '[ $rc = 0 ] && [ ! -s $d/err ] && [ "$(grep -c "^ *--" $d/out)" -ge 3 ] || { [ $tool = bench ] && [ $rc = 0 ] && has out "gpuir-bench launch"; }'
    go "${!tool}" --version
    check "gpuir-$tool --version says $version" eval '[ $rc = 0 ] && has out "(gpuir) $version\$"'
done
go $bench launch --help
check "gpuir-bench launch --help lists --kernels" eval '[ $rc = 0 ] && has out "^  --kernels=N "'

# ---- unknown flags are named ----
go $opt --lowr tests/ir/print/ops.gir
check "gpuir-opt --lowr names the flag (status 2)" eval '[ $rc = 2 ] && has err "unknown option .--lowr."'
go $run --frobnicate x.gir
check "gpuir-run --frobnicate names the flag (status 2)" eval '[ $rc = 2 ] && has err "unknown option .--frobnicate."'
go $bench launch --kernel-count=3
check "gpuir-bench launch --kernel-count names the flag (status 2)" eval '[ $rc = 2 ] && has err "unknown option .--kernel-count."'
go $bench attention --layout=xyz
check "gpuir-bench attention --layout=xyz says what it takes (status 2; it said nothing)" eval '[ $rc = 2 ] && has err "attention: --layout=.xyz.: it takes bhsd or bshd"'
go $bench attention --dtype=i64
check "gpuir-bench attention --dtype=i64 says what it takes (status 2)" eval '[ $rc = 2 ] && has err "attention: --dtype=.i64.: it takes bf16, f16 or f32"'
go $opt --timing=3 tests/ir/print/ops.gir
check "gpuir-opt --timing=3: the flag takes no value" eval '[ $rc = 2 ] && has err "option .--timing. takes no value"'

# ---- numbers are checked whole ----
for a in --repeat=abc --repeat=0 --seed=x --seed=-1 --dynamic=abc --dynamic=3x --rtol=nan --atol=-1 --sm-count=0 \
         --sm-count=8x; do
    go $run x.gir "$a"
    check "gpuir-run $a refused naming the flag" eval '[ $rc = 2 ] && has err "gpuir-run: ${a%%=*} wants"'
done
for a in --sm-count=abc --target=sm_9x; do
    go $opt "$a" tests/ir/print/ops.gir
    check "gpuir-opt $a refused naming the flag" eval '[ $rc = 2 ] && has err "${a%%=*} wants"'
done
for a in "launch --repeat=abc" "launch --kernels=1e3" "matmul --m=12x" "passes --ops=10,x" "copy --mb=-1"; do
    go $bench $a
    f=${a#* }
    check "gpuir-bench $a refused naming the flag" eval '[ $rc = 2 ] && has err "${f%%=*} wants"'
done

# ---- a parse error shows its source line and a caret under the column ----
cat > "$d/bad.gir" <<'EOF'
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = add %a, %b : (tensor<4xf32> tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
EOF
go $opt "$d/bad.gir"
{ echo "bad.gir:2:36: error: expected ',', found 'tensor'"; sed -n 2p "$d/bad.gir"
  echo "                                   ^"; } > "$d/want"
check "gpuir-opt: a parse error prints the line and a caret under the column" \
    eval '[ $rc = 1 ] && sed "s|^.*/bad.gir|bad.gir|" $d/err | cmp -s - $d/want'
go $run "$d/bad.gir"
check "gpuir-run: the same caret" eval '[ $rc = 1 ] && sed "s|^.*/bad.gir|bad.gir|" $d/err | cmp -s - $d/want'
go $bench compile "$d/bad.gir"
check "gpuir-bench compile: a parse error at the file's own line, once, nothing else (it named bench:2:36, printed timings of nothing and the error again as NVRTC's)" \
    eval '[ $rc = 1 ] && [ ! -s $d/out ] && sed "s|^gpuir-bench compile: .*/bad.gir|bad.gir|" $d/err | cmp -s - $d/want'
printf 'func.func @f\033]0;title\007\033[31mRED\033[0m(' > "$d/esc.gir"
go $opt "$d/esc.gir"
check "gpuir-opt: a diagnostic escapes the control bytes of the source line it quotes (ESC, BEL went to the terminal)" \
    eval '[ $rc = 1 ] && ! grep -q "$(printf "[\033\007]")" $d/err && [ "$(sed -n 2p $d/err)" = "func.func @f\\x1b]0;title\\x07\\x1b[31mRED\\x1b[0m(" ]'
printf 'func.func @f(%%a: tensor<4xf32>) -> tensor<4xf32> {\n  %%0 = neg %%a {x = "\033[1m\303\251"} : (tensor<4xf32>) tensor<4xf32>\n' \
    > "$d/esc2.gir"
go $opt "$d/esc2.gir"
{ printf '  %%0 = neg %%a {x = "\\x1b[1m\303\251"} : (tensor<4xf32>) tensor<4xf32>\n'; printf '%50s\n' '^'; } > "$d/want"
check "gpuir-opt: the caret stays under the column past an escaped byte and a UTF-8 letter" \
    eval '[ $rc = 1 ] && sed 1d $d/err | cmp -s - $d/want'
go $run "$(printf "$d/x\033[31m.gir")"
check "gpuir-run: a file name's control bytes are escaped in its message" \
    eval '[ $rc = 1 ] && has err "cannot read .*/x\\\\x1b\[31m.gir.: No such file" && ! grep -q "$(printf "\033")" $d/err'
printf 'func.func @f(%%x: tensor<4xf32>) -> tensor<4xf32> {\n\t%%e = exp %%x : (tensor<4xf32>) -> tensor<4xf31>\n}\n' \
    > "$d/tab.gir"
go $opt "$d/tab.gir"
check "gpuir-opt: the caret keeps the line's tabs" eval '[ $rc = 1 ] && [ "$(tail -n 1 $d/err)" = "$(printf "\t%42s^" "")" ]'

# ---- pass names and --emit=cuda ----
go $opt --lower --print-ir-after=fusee tests/ir/print/ops.gir
check "gpuir-opt --print-ir-after=fusee names the unknown pass" eval '[ $rc = 2 ] && has err "no pass .fusee."'
go $opt --print-ir-before=nope tests/ir/print/ops.gir
check "gpuir-opt --print-ir-before=nope names the unknown pass" eval '[ $rc = 2 ] && has err "no pass .nope."'
cat > "$d/f.gir" <<'EOF'
func.func @f(%x: tensor<2x3xf32>, %y: tensor<3xi32>) -> tensor<2x3xf32> {
  %c = cast %y : (tensor<3xi32>) -> tensor<3xf32>
  %a = add %x, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %a : tensor<2x3xf32>
}
EOF
go $opt --emit=cuda "$d/f.gir"
check "gpuir-opt --emit=cuda without --lower lowers first" eval '[ $rc = 0 ] && has out "GPUIR_KERNEL gpuir_k_f_k0("'
go $opt --passes=fuse --emit=cuda "$d/f.gir"
check "gpuir-opt --passes=fuse --emit=cuda refuses a tensor-level module" \
    eval '[ $rc = 1 ] && has err "emit=cuda needs a lowered module" && [ ! -s $d/out ]'

# ---- inline inputs (iree-run-module's form) ----
go $run "$d/f.gir" --input=2x3xf32=1,2,3,4,5,6 '--input=3xi32=10 20 30'
check "gpuir-run --input=2x3xf32=1,2,3,4,5,6" eval '[ $rc = 0 ] && has out "^  \[11, 22, 33, 14, 25, 36\]"'
go $run "$d/f.gir" --input=2x3xf32=0.5 '--input=3xi32=[1,2,3]'
check "gpuir-run: one inline value fills the shape; brackets are ignored" eval '[ $rc = 0 ] && has out "^  \[1.5, 2.5, 3.5, 1.5, 2.5, 3.5\]"'
go $run "$d/f.gir" --input=2x3xf32=1,2 --input=3xi32=1,2,3
check "gpuir-run: an inline input with too few values is refused" eval '[ $rc = 1 ] && has err "input #0: .* gives 2 values for 6 elements"'
go $run "$d/f.gir" --input=2x3xf32=1,2,x,4,5,6 --input=3xi32=1,2,3
check "gpuir-run: an inline input with a non-number is refused" eval '[ $rc = 1 ] && has err "is not a list of f32 numbers"'
go $run "$d/f.gir" --input=2x3xf32=1 --input=3xi32=1,2147483648,3
check "gpuir-run: an i32 out of range is refused (it was saturated)" eval '[ $rc = 1 ] && has err "input #1: 2147483648 is out of i32.s range"'
for spec in 1x1x1x1x1x1x1x1x1x3xf32=1:"too many dimensions: 10 > 8" \
            99999999999999999999x3xf32=1:"dimension 99999999999999999999 is too large: past 2^63 - 1, and an input holds at most 4294967296 elements" \
            100000x100000x3xf32=1:"the shape 100000x100000x3 has too many elements: the limit is 4294967296" \
            2x3xf99=1:"unknown dtype .f99. in .2x3xf99=1. (the dtypes: f32, f16, bf16, i32, i64)" \
            2x3xfloat32=1:"unknown dtype .float32." 2x3xf32:".2x3xf32. has no .=values." 2x3x=1:"no dtype in" \
            2x-3xf32=1:".-3. is not a dimension"; do
    go $run "$d/f.gir" --input="${spec%%:*}" --input=3xi32=1
    check "gpuir-run --input=${spec%%:*}: says what is wrong (it said 'not a dimension of at most 8', or read a file)" \
        eval '[ $rc = 1 ] && has err "^gpuir-run: input #0: ${spec#*:}" && [ $(wc -l < $d/err) = 1 ]'
done
go $run "$d/f.gir" --input=3x2xf32=1 --input=3xi32=1
check "gpuir-run: an inline input of another shape than its parameter is refused before it is made (2^32 elements took 16 GiB)" \
    eval '[ $rc = 1 ] && has err "^gpuir-run: input #0: .3x2xf32=1. is tensor<3x2xf32>, the parameter tensor<2x3xf32>$"'
go $run "$d/f.gir" --input=2x3xf32=1 --input=3xf32=1
check "gpuir-run: an inline input of another dtype than its parameter is refused before it is made" \
    eval '[ $rc = 1 ] && has err "^gpuir-run: input #1: .3xf32=1. is tensor<3xf32>, the parameter tensor<3xi32>$"'
go $run "$d/f.gir" --input=@"$d/none.npy" --input=3xi32=1
check "gpuir-run: a .npy file that cannot be read names the input" \
    eval '[ $rc = 1 ] && has err "^gpuir-run: input #0: the .npy file .*none.npy. cannot be used:" && has err "none.npy: cannot read"'
for dt in f32 f16 bf16; do
    printf 'func.func @id(%%x: tensor<4x%s>) -> tensor<4x%s> {\n  return %%x : tensor<4x%s>\n}\n' $dt $dt $dt > "$d/$dt.gir"
done
for case in f32:1e400:"-3.40282347e+38 to 3.40282347e+38" f32:-1e40:"-3.40282347e+38 to 3.40282347e+38" \
            f16:70000:"-65504 to 65504" f16:-1e6:"-65504 to 65504" bf16:3.4e38:"-3.38953139e+38 to 3.38953139e+38"; do
    IFS=: read -r dt v range <<< "$case"
    go $run "$d/$dt.gir" --input=4x$dt=1,$v,1e-400,1
    check "gpuir-run: an inline $dt $v is refused naming the value and the range (it became inf)" \
        eval '[ $rc = 1 ] && has err "^gpuir-run: input #0: $v is out of $dt.s range, $range (in .4x$dt=1,$v,1e-400,1.)$"'
done
go $run "$d/f16.gir" --input=4xf16=inf,-inf,nan,65519
check "gpuir-run: inf and nan written as such are kept; 65519 rounds to f16's 65504" \
    eval '[ $rc = 0 ] && has out "^  \[inf, -inf, nan, 65504\]"'
for case in "1,,3,4:2" ",1,3,4:1" "1,2,3,4,:5" "1, ,3,4:2"; do
    go $run "$d/f32.gir" "--input=4xf32=${case%:*}"
    check "gpuir-run --input=4xf32=${case%:*}: names the empty value's position" \
        eval '[ $rc = 1 ] && has err "^gpuir-run: input #0: an empty value at position ${case##*:} in .4xf32=${case%:*}.$"'
done
printf 'func.func @id(%%x: tensor<3xi64>) -> tensor<3xi64> {\n  return %%x : tensor<3xi64>\n}\n' > "$d/i64.gir"
go $run "$d/i64.gir" --input=3xi64=9007199254740993,-9223372036854775808,9223372036854775807
check "gpuir-run: i64 inputs and results are exact past 2^53" eval '[ $rc = 0 ] && has out "^  \[9007199254740993, -9223372036854775808, 9223372036854775807\]"'

# ---- no more --output / --expected_output than results, checked before the run ----
go $run "$d/f.gir" --input=2x3xf32=1 --input=3xi32=1 --output=@"$d/o1.npy" --output=@"$d/o2.npy"
check "gpuir-run: two --output for one result is refused (the second was never written, exit 0)" \
    eval '[ $rc = 1 ] && has err "gpuir-run: 2 --output flags for 1 result of @f\$" && [ ! -e $d/o1.npy ] && [ ! -s $d/out ]'
go $run "$d/f.gir" --input=2x3xf32=1 --input=3xi32=1 --output=@"$d/o1.npy"
go $run "$d/f.gir" --input=2x3xf32=1 --input=3xi32=1 --expected_output=@"$d/o1.npy" --expected_output=@"$d/o1.npy"
check "gpuir-run: two --expected_output for one result is refused before the run" \
    eval '[ $rc = 1 ] && has err "gpuir-run: 2 --expected_output flags for 1 result of @f\$" && [ ! -s $d/out ]'
go $run "$d/f.gir" --input=2x3xf32=1 --input=3xi32=1 --output=@
check "gpuir-run: --output=@ (no file name) is a usage error (it failed after the run)" \
    eval '[ $rc = 2 ] && has err "gpuir-run: --output needs a file name" && [ ! -s $d/out ]'
go $run "$d/f.gir" --input=2x3xf32=1 --input=3xi32=1 --output=@"$d/missing/o.npy"
check "gpuir-run: an --output into a missing directory is refused before the run" \
    eval '[ $rc = 1 ] && has err "gpuir-run: --output=@.*/missing/o.npy: cannot write into .*/missing: No such file or directory" && [ ! -s $d/out ]'

# ---- globals must be bound ----
cat > "$d/g.gir" <<'EOF'
global @W : tensor<3xf32>
func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  %w = get_global {name = @W} : () -> tensor<3xf32>
  %a = add %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %a : tensor<3xf32>
}
EOF
go $run "$d/g.gir"
check "gpuir-run refuses an unbound global" eval '[ $rc = 1 ] && has err "global @W is not bound" && [ ! -s $d/out ]'
go $run "$d/g.gir" --random-globals
check "gpuir-run --random-globals fills it" eval '[ $rc = 0 ] && has out "^result\[0\]: tensor<3xf32>"'

cat > "$d/dd.gir" <<'EOF'
func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %e = exp %x : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %e : tensor<?x?xf32>
}
EOF
go $run "$d/dd.gir" --dynamic=4294967296
check "gpuir-run names the input a --dynamic size cannot make" \
    eval '[ $rc = 1 ] && has err "input #0 (tensor<?x?xf32>, each ? 4294967296) cannot be made" && has err "overflows 2^63"'

# ---- .npy inputs ----
npy() {  # npy FILE DICT DATA (both with printf escapes): a version 1.0 file
    printf '%b' "$2" > "$d/dict"
    local n=$(wc -c < "$d/dict")
    { printf '\223NUMPY\001\000'; printf "\\$(printf %03o $((n & 255)))\\$(printf %03o $((n >> 8)))"
      cat "$d/dict"; printf "$3"; } > "$1"
}
npy "$d/f8.npy" "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }        \n" \
    '\000\000\000\000\000\000\360\077\000\000\000\000\000\000\004\100\000\000\000\000\000\000\000\300'
go $run "$d/g.gir" --input=3xf32=1,1,1 --global=W=@"$d/f8.npy"
check "gpuir-run reads NumPy's default <f8 into an f32 global" eval '[ $rc = 0 ] && has out "^  \[2, 3.5, -1\]"'
cat > "$d/i.gir" <<'EOF'
func.func @f(%x: tensor<3xi32>) -> tensor<3xi32> {
  %a = add %x, %x : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %a : tensor<3xi32>
}
EOF
go $run "$d/i.gir" --input=@"$d/f8.npy"
check "gpuir-run: <f8 into an i32 parameter names the file and both dtypes" \
    eval '[ $rc = 1 ] && has err "f8.npy: .npy: the file holds .<f8. (f64), i32 is wanted"'
npy "$d/b1.npy" "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n" '\001\000\001'
go $run "$d/i.gir" --input=@"$d/b1.npy"
check "gpuir-run reads a |b1 (bool) file as 0 and 1" eval '[ $rc = 0 ] && has out "^  \[2, 0, 2\]"'
npy "$d/nul.npy" "{'descr': '<i4@', 'fortran_order': False, 'shape': (3,), }" \
    '\001\000\000\000\001\000\000\000\001\000\000\000'
sed -i 's/<i4@/<i4\x00/' "$d/nul.npy"              # a NUL inside descr
go $run "$d/i.gir" --input=@"$d/nul.npy"
check "gpuir-run refuses a NUL inside descr" eval '[ $rc = 1 ] && has err "nul.npy: .npy header: a control or non-ASCII byte"'
npy "$d/dup.npy" "{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (3,), }" \
    '\001\000\000\000\001\000\000\000\001\000\000\000'
go $run "$d/i.gir" --input=@"$d/dup.npy"
check "gpuir-run refuses a duplicate key" eval '[ $rc = 1 ] && has err "the key .descr. appears twice"'
npy "$d/after.npy" "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), } junk" \
    '\001\000\000\000\001\000\000\000\001\000\000\000'
go $run "$d/i.gir" --input=@"$d/after.npy"
check "gpuir-run refuses text after the header dict" eval '[ $rc = 1 ] && has err "text after the dict"'
for dt in f32 f16; do    # 1e300 past f32 and f16, 70000 past f16 only
    npy "$d/big.npy" "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }        \n" \
        "$( [ $dt = f32 ] && echo '\000\000\000\000\000\000\360\077\234\165\000\210\074\344\067\176' ||
            echo '\000\000\000\000\000\000\360\077\000\000\000\000\000\027\361\100')\000\000\000\000\000\000\000\000\000\000\000\000\000\000\360\077"
    go $run "$d/$dt.gir" --input=@"$d/big.npy"
    check "gpuir-run: an <f8 value past $dt's range is refused naming the element (it became inf)" \
        eval '[ $rc = 1 ] && has err "big.npy: .npy: element 1, [0-9e+]*, is out of $dt.s range"'
done
printf '\223NUMPY\001\000' > "$d/mv.npy"
go $run "$d/f32.gir" --input=@"$d/mv.npy"
check "gpuir-run: a .npy of the magic and version only is truncated (it said the magic was missing)" \
    eval '[ $rc = 1 ] && has err "mv.npy: .npy: truncated: 8 bytes, fewer than the 10"'
go timeout 20 $run "$d/i.gir" --input=@/dev/zero
check "gpuir-run --input=@/dev/zero is refused at once" eval '[ $rc = 1 ] && has err "/dev/zero: not a regular file"'
mkfifo "$d/fifo"
go timeout 20 $run "$d/i.gir" --input=@"$d/fifo"
check "gpuir-run --input=@FIFO is refused, not waited on" eval '[ $rc = 1 ] && has err "fifo: not a regular file"'

# ---- no fixed-size arrays: a function of 100 parameters ----
{
    printf 'func.func @many('
    for i in $(seq 0 99); do printf '%s%%a%d: tensor<2xf32>' "$([ $i -gt 0 ] && echo ', ')" $i; done
    printf ') -> (tensor<2xf32>, tensor<2xf32>) {\n'
    printf '  %%s0 = add %%a0, %%a1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n'
    for i in $(seq 1 98); do
        printf '  %%s%d = add %%s%d, %%a%d : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n' $i $((i - 1)) $((i + 1))
    done
    printf '  return %%s97, %%s98 : tensor<2xf32>, tensor<2xf32>\n}\n'
} > "$d/many.gir"
inputs=()
for i in $(seq 0 99); do inputs+=(--input=2xf32=1); done
go $run "$d/many.gir" "${inputs[@]}"
check "gpuir-run runs a function of 100 parameters given inline" \
    eval '[ $rc = 0 ] && has out "^  \[99, 99\]" && has out "^  \[100, 100\]"'
go $run "$d/many.gir" --backend=emu --check
check "gpuir-run runs it on the emulator with random inputs" eval '[ $rc = 0 ] && has out "^result\[1\]: emu matches ref"'

# ---- gpuir-bench --plot: the title says where the times came from ----
mkdir -p "$d/bin"
printf '#!/bin/sh\ncat > "%s/gnuplot.in"\n' "$d" > "$d/bin/gnuplot"      # a gnuplot that keeps its script
chmod +x "$d/bin/gnuplot"
go env PATH="$d/bin:$PATH" $bench passes --ops=20,40 --repeat=1 --plot="$d/p.png"
check "gpuir-bench passes --plot: titled with the host CPU" \
    eval '[ $rc = 0 ] && grep -q "set title .gpuir-bench passes: times from the host CPU" $d/gnuplot.in'
go env PATH="$d/bin:$PATH" $bench launch --kernels=2 --repeat=1 --plot="$d/p.png"
check "gpuir-bench launch --plot: titled with the backend that ran" \
    eval '[ $rc = 0 ] && grep -q "set title .gpuir-bench launch: times from \(emu (CPU emulator\|cuda\)" $d/gnuplot.in'

# ---- module text: devices and directories refused, pipes read ----
go timeout 20 $opt /dev/zero
check "gpuir-opt /dev/zero is refused at once" eval '[ $rc = 1 ] && has err "cannot read ./dev/zero.: not a regular file or a pipe"'
go timeout 20 $run "$d"
check "gpuir-run DIRECTORY is refused" eval '[ $rc = 1 ] && has err "not a regular file or a pipe"'
go eval "cat '$d/f.gir' | $run /dev/stdin --input=2x3xf32=1 --input=3xi32=1"
check "gpuir-run reads a module from a pipe (/dev/stdin)" eval '[ $rc = 0 ] && has out "^  \[2, 2, 2, 2, 2, 2\]"'

# ---- output that cannot be written: status 1, the reason said ----
if [ -w /dev/full ]; then
    "$opt" "$d/f.gir" >/dev/full 2>"$d/err"; rc=$?
    check "gpuir-opt > /dev/full fails, saying why (it exited 0, the output lost)" \
        eval '[ $rc = 1 ] && has err "gpuir-opt: cannot write the output: No space left on device"'
    go "$opt" "$d/f.gir" -o /dev/full
    check "gpuir-opt -o /dev/full fails, naming the file" eval '[ $rc = 1 ] && has err "cannot write ./dev/full.: No space"'
    "$run" "$d/f.gir" --input=2x3xf32=1 --input=3xi32=1 >/dev/full 2>"$d/err"; rc=$?
    check "gpuir-run > /dev/full fails, saying why" eval '[ $rc = 1 ] && has err "gpuir-run: cannot write the output"'
else
    echo "SKIP cli: output to /dev/full (no writable /dev/full)"
fi
