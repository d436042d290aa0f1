#!/bin/sh
# The table of contents at the top of gpuir.h lists the `// >>name` anchors,
# in the order `grep -n '^// >>' gpuir.h` prints them.
cd "$(dirname "$0")/.." || exit 1
anchors=$(grep '^// >>' gpuir.h | sed 's|^// >>||')
toc=$(sed -n '/TABLE OF CONTENTS/,/^$/p' gpuir.h | sed -n 's/^ *>>\([a-z.-]*\).*/\1/p')
if [ -n "$anchors" ] && [ "$anchors" = "$toc" ]; then echo "PASS toc: matches the anchors"
else
    echo "FAIL toc: the table of contents and the anchors differ"
    printf 'anchors:\n%s\ntoc:\n%s\n' "$anchors" "$toc" >&2
fi
