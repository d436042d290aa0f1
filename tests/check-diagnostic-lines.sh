#!/bin/sh
# Expected diagnostics in the text tests name their line relative to the
# directive (`{{.*}}f.gir:[[@LINE+2]]:5: error: ...`), never a literal line
# number, so inserting a line above a check does not break it.
cd "$(dirname "$0")/.." || exit 1
bad=$(grep -rnE '^[[:space:]]*// [A-Z][A-Z0-9-]*:.*\.gir:[0-9]+:' --include='*.gir' tests)
if [ -z "$bad" ]; then echo "PASS diagnostic-lines: every expected diagnostic names a relative line"
else
    echo "FAIL diagnostic-lines: $(echo "$bad" | wc -l) expected diagnostics name a literal line (use [[@LINE+N]])"
    echo "$bad" | sed -n '1,20p' >&2
fi
