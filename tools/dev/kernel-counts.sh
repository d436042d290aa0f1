#!/bin/sh
# Kernel counts, function by function, of a base revision against the
# working tree: which programs a change to the passes lowers to more
# kernels (a fusion lost) or fewer.
#
#   tools/dev/kernel-counts.sh [--fuzz=N] [--seed=S] BASE [FILE.gir...]
#
# Lowers every FILE (default: every .gir under tests/ and examples/; a
# file with `// -----` lines as split input) with gpuir-opt --lower as
# built at BASE (a git revision) and as built from the working tree, and
# with --fuzz=N also N modules fuzz_diff generates (seeds S+1..S+N, default
# S 950000: programs of random ops and of the patterns the fusing passes
# look for). Prints each function whose count changed, and a file that
# lowers on one side only. Exit status 1 when some function has more
# kernels than at BASE, or lowers at BASE only; else 0. Needs cc, git and
# libstb-dev; builds in a temporary directory it removes.
set -eu
fuzz=0
seed=950000
while [ $# -gt 0 ]; do
    case "$1" in
    --fuzz=*) fuzz=${1#--fuzz=} ;;
    --seed=*) seed=${1#--seed=} ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "kernel-counts: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
    shift
done
[ $# -ge 1 ] || { echo "usage: tools/dev/kernel-counts.sh [--fuzz=N] [--seed=S] BASE [FILE.gir...]" >&2; exit 2; }
base=$1
shift
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
flags="-std=c99 -O1 -I/usr/include/stb"
git -C "$root" worktree add -q --detach "$tmp/base" "$base"
cc $flags "$tmp/base/tools/gpuir-opt.c" -o "$tmp/opt-base" -lstb -lm -ldl -pthread
cc $flags "$root/tools/gpuir-opt.c" -o "$tmp/opt-new" -lstb -lm -ldl -pthread
if [ $# -eq 0 ]; then
    set -- $(cd "$root" && find tests examples -name '*.gir' | sort)
    cd "$root"
fi
if [ "$fuzz" -gt 0 ]; then
    cc $flags -I"$root" "$root/tests/fuzz/fuzz_diff.c" "$root/examples/gpuir_impl.c" -o "$tmp/fuzz_diff" \
        -lstb -lm -ldl -pthread
    mkdir -p "$tmp/fuzz"
    i=1
    while [ $i -le "$fuzz" ]; do
        "$tmp/fuzz_diff" --seed=$((seed + i)) --count=1 --print > "$tmp/fuzz/seed$((seed + i)).gir" 2>/dev/null || true
        i=$((i + 1))
    done
    set -- "$@" "$tmp"/fuzz/*.gir
fi
# counts OPT FILE: "function count" lines, or the word FAILED
counts() {
    split=""
    grep -q '^// -----' "$2" && split=--split-input-file
    if out=$("$1" --lower $split "$2" 2>/dev/null); then
        printf '%s\n' "$out" | sed -n 's/^ *gpu\.func @\([A-Za-z0-9_.]*\)_k[0-9][0-9]*(.*/\1/p' | sort | uniq -c |
            awk '{print $2, $1}'
    else
        echo FAILED
    fi
}
worse=0 better=0 same=0
for f in "$@"; do
    counts "$tmp/opt-base" "$f" > "$tmp/a"
    counts "$tmp/opt-new" "$f" > "$tmp/b"
    if cmp -s "$tmp/a" "$tmp/b"; then same=$((same + 1)); continue; fi
    name=${f#"$tmp/fuzz/"}
    if grep -q FAILED "$tmp/b" && ! grep -q FAILED "$tmp/a"; then
        echo "WORSE  $name: lowers at $base only"; worse=$((worse + 1)); continue
    fi
    if grep -q FAILED "$tmp/a"; then echo "NOTE   $name: lowers in the working tree only"; continue; fi
    # join on the function name; a function missing on one side counts 0
    lines=$(awk 'NR == FNR { a[$1] = $2; next } { b[$1] = $2 }
                 END { for (k in a) if (!(k in b)) b[k] = 0; for (k in b) if (!(k in a)) a[k] = 0;
                       for (k in a) if (a[k] != b[k]) print (b[k] > a[k] ? "WORSE " : "BETTER"), k, a[k], b[k] }' \
                 "$tmp/a" "$tmp/b")
    printf '%s\n' "$lines" | while read -r verdict fn was now; do
        echo "$verdict $name @$fn: $was -> $now kernels"
    done
    if printf '%s\n' "$lines" | grep -q '^WORSE'; then worse=$((worse + 1)); else better=$((better + 1)); fi
done
echo "kernel-counts: $# files against $base: $worse with more kernels, $better with fewer, $same unchanged"
[ "$worse" -eq 0 ]
