#!/bin/sh
# tools/dev/reorder-sections.py (the lead re-runs it after merging): on a
# copy of gpuir.h it moves the sections into its default order keeping every
# line, the TOC follows (check-toc's rule), a second run changes nothing,
# and a marker that is missing or sections that are not adjacent fail with
# status 2 and change nothing. SKIP without python3.
cd "$(dirname "$0")/.." || exit 1
command -v python3 >/dev/null 2>&1 || { echo "SKIP reorder: no python3"; exit 0; }
d=$(mktemp -d "${TMPDIR:-/tmp}/gpuir-reorder-XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
r=tools/dev/reorder-sections.py
cp gpuir.h "$d/a.h"
if python3 $r --file "$d/a.h" >/dev/null && cp "$d/a.h" "$d/b.h" && python3 $r --file "$d/b.h" >/dev/null &&
   cmp -s "$d/a.h" "$d/b.h" && python3 $r --file "$d/a.h" --check >/dev/null
then echo "PASS reorder: the default order, and a second run changes nothing"
else echo "FAIL reorder: not idempotent or did not run"; fi
sort gpuir.h > "$d/before"; sort "$d/a.h" > "$d/after"
if cmp -s "$d/before" "$d/after"; then echo "PASS reorder: every line kept (moved, not changed)"
else echo "FAIL reorder: lines changed"; diff "$d/before" "$d/after" | sed -n '1,10p' >&2; fi
anchors=$(grep '^// >>' "$d/a.h" | sed 's|^// >>||')
toc=$(sed -n '/TABLE OF CONTENTS/,/^$/p' "$d/a.h" | sed -n 's/^ *>>\([a-z.-]*\).*/\1/p')
if [ "$anchors" = "$toc" ]; then echo "PASS reorder: the table of contents moves with the sections"
else echo "FAIL reorder: the table of contents and the anchors differ after the move"; fi
cp gpuir.h "$d/c.h"
python3 $r --file "$d/c.h" rt.driver rt.no-such-section >"$d/out" 2>&1; rc1=$?
python3 $r --file "$d/c.h" util rt.exec >>"$d/out" 2>&1; rc2=$?
if [ $rc1 = 2 ] && [ $rc2 = 2 ] && grep -q 'no section marked // >>rt.no-such-section' "$d/out" &&
   grep -q 'not adjacent' "$d/out" && cmp -s gpuir.h "$d/c.h"
then echo "PASS reorder: a missing marker and sections apart fail loudly, changing nothing"
else echo "FAIL reorder: bad orders ($rc1, $rc2)"; cat "$d/out" >&2; fi
