#!/bin/sh
# Each section of gpuir.h (from its `// >>name` marker to the next) says in
# its banner what it reads: "Reads: a, b (why), c. Writes: ...". This derives
# what each section really uses of the others and fails, naming the section
# and the name it uses, when that section is not in its "Reads:" line, or
# when the line lists a section it uses nothing of.
#
# A name belongs to the section that defines it: a function (gpuir_name( at
# column 0 followed by a body, not a prototype), a type (typedef, struct or
# enum tag), an enum constant, a macro (#define) or a file-scope variable.
# A section uses a name when the name appears in its code (comments and
# string literals removed, so neither the banners nor the CUDA C in string
# literals count). Every section reads api, the public interface, unlisted.
#
# The "Reads:" list: the text after "Reads:" up to "Writes:", parenthesized
# remarks removed, split at commas and at the sentence's end; an item whose
# first word (less a trailing "'s") is a section's name, or the name without
# "pass.", lists that section ("pass.*": every section named pass.something);
# other items ("the environment") are free text.
#
# The api section declares every public function: its uses are not counted.
# A device table's self is cast to its implementation's type (gpuir__cudart,
# gpuir__emu, gpuir__fault) only in the section that defines that type.
# tools/gpuir-bench.c uses no gpuir__/GPUIR__ name but those the api.internal
# section defines or lists after "Exposes:" (a trailing * is a prefix).
# Then it checks that the check fails on a copy with an unlisted use.
# SECTIONS_OFFERS=1 prints, instead, what each section offers the others
# (the names other sections use of it: its interface, derived, not kept by
# hand). SECTIONS_FILE=path checks another file (and not the probe); SECTIONS_VERBOSE=1 also prints
# every name each section uses of each other section.
cd "$(dirname "$0")/.." || exit 1
file=${SECTIONS_FILE:-gpuir.h}
[ -r "$file" ] || { echo "FAIL sections: cannot read $file"; exit 0; }
check() {  # check FILE: a PASS or FAIL line per section
awk '
# ---- pass 1: each line without comments and string/char literals ----
function strip(line,    out, c, i, n, q) {
    out = ""
    n = length(line)
    i = 1
    while (i <= n) {
        if (in_block) {
            q = index(substr(line, i), "*/")
            if (!q) return out
            i += q + 1
            in_block = 0
            out = out " "
            continue
        }
        c = substr(line, i, 1)
        if (c == "/" && substr(line, i + 1, 1) == "/") return out
        if (c == "/" && substr(line, i + 1, 1) == "*") { in_block = 1; i += 2; continue }
        if (c == "\"" || c == "\047") {
            q = c
            out = out q
            for (i++; i <= n; i++) {
                c = substr(line, i, 1)
                if (c == "\\") { i++; continue }
                if (c == q) break
            }
            out = out q
            i++
            continue
        }
        out = out c
        i++
    }
    return out
}
{
    raw[NR] = $0
    if ($0 ~ /^\/\/ >>/) { sec = substr($0, 6); order[++nsec] = sec; start[sec] = NR }
    section[NR] = sec
    code[NR] = strip($0)
}
# ---- pass 2: what each section defines ----
function define(name, s, kind) {
    if (name in owner) return
    owner[name] = s
    what[name] = kind
}
# Whether the name whose "(" starts at column col of line i heads a body:
# after the parenthesized list (and any attributes) comes "{", not ";".
function heads_body(i, col,    depth, j, c, t) {
    depth = 0
    for (; i <= NR && i < start_i + 40; i++) {
        t = code[i]
        for (j = col; j <= length(t); j++) {
            c = substr(t, j, 1)
            if (c == "(") depth++
            else if (c == ")") depth--
            else if (depth == 0 && c == "{") return 1
            else if (depth == 0 && c == ";") return 0
        }
        col = 1
    }
    return 0
}
function definitions(    i, t, s, m, name, in_enum, rest) {
    for (i = 1; i <= NR; i++) {
        t = code[i]
        s = section[i]
        if (s == "") continue
        if (t ~ /^#[ \t]*define[ \t]+[A-Za-z_]/) {
            name = t
            sub(/^#[ \t]*define[ \t]+/, "", name)
            match(name, /^[A-Za-z_][A-Za-z0-9_]*/)
            define(substr(name, 1, RLENGTH), s, "macro")
            continue
        }
        if (t ~ /^(typedef[ \t]+)?enum[ \t]+[A-Za-z0-9_]*[ \t]*\{/ || t ~ /^(typedef[ \t]+)?enum[ \t]*\{/) in_enum = 1
        if (in_enum) {
            rest = t
            sub(/^[^{]*\{/, "", rest)
            while (match(rest, /(^|[ \t,])GPUIR_[A-Z0-9_]*/)) {
                name = substr(rest, RSTART, RLENGTH)
                sub(/^[ \t,]/, "", name)
                define(name, s, "enum constant")
                rest = substr(rest, RSTART + RLENGTH)
                sub(/^[ \t]*=[^,]*/, "", rest)
            }
            if (t ~ /^\}/ || t ~ /\}[ \t]*[A-Za-z0-9_]*[ \t]*;[ \t]*$/) in_enum = 0   # also a one-line enum
        }
        if (match(t, /^(typedef[ \t]+)?(struct|enum|union)[ \t]+gpuir_[A-Za-z0-9_]*[ \t]*\{/)) {
            name = t
            sub(/^(typedef[ \t]+)?(struct|enum|union)[ \t]+/, "", name)
            match(name, /^[A-Za-z0-9_]*/)
            define(substr(name, 1, RLENGTH), s, "type")
        }
        if (match(t, /^\}[ \t]*gpuir_[A-Za-z0-9_]*[ \t]*;/)) {
            name = substr(t, RSTART, RLENGTH)
            gsub(/[} \t;]/, "", name)
            define(name, s, "type")
            continue
        }
        if (t ~ /^typedef/) {
            if (match(t, /\(\*[ \t]*gpuir_[A-Za-z0-9_]*\)/)) {
                name = substr(t, RSTART, RLENGTH)
                gsub(/[(*) \t]/, "", name)
                define(name, s, "type")
            } else if (match(t, /gpuir_[A-Za-z0-9_]*[ \t]*;[ \t]*$/)) {
                name = substr(t, RSTART, RLENGTH)
                gsub(/[ \t;]/, "", name)
                define(name, s, "type")
            }
            continue
        }
        if (t !~ /^[A-Za-z_]/) continue
        if (match(t, /gpuir_[A-Za-z0-9_]*[ \t]*\(/)) {
            name = substr(t, RSTART, RLENGTH)
            sub(/[ \t]*\($/, "", name)
            start_i = i
            if (heads_body(i, RSTART + RLENGTH - 1)) define(name, s, "function")
            continue
        }
        if (t ~ /^static/ && match(t, /gpuir_[A-Za-z0-9_]*[ \t]*(\[[^]]*\][ \t]*)*=/)) {
            name = substr(t, RSTART, RLENGTH)
            sub(/[ \t\[=].*$/, "", name)
            define(name, s, "variable")
        }
    }
}
# ---- pass 3: what each section uses of the others ----
function uses(    i, t, s, name, o) {
    for (i = 1; i <= NR; i++) {
        s = section[i]
        if (s == "" || s == "api") continue
        t = code[i]
        while (match(t, /[A-Za-z_][A-Za-z0-9_]*/)) {
            name = substr(t, RSTART, RLENGTH)
            t = substr(t, RSTART + RLENGTH)
            if (!(name in owner)) continue
            o = owner[name]
            if (o == s || o == "api") continue
            if (!((s SUBSEP o) in used)) { used[s, o] = name; first_line[s, o] = i; kind[s, o] = what[name] }
            if (verbose && !((s SUBSEP name) in seen)) { seen[s, name] = 1; all[s, o] = all[s, o] " " name }
            if (offers && !(name in offered)) { offered[name] = 1; offer[o] = offer[o] " " name }
        }
    }
}
# ---- the self of a device table is cast to its type only where it is defined ----
function self_casts(    i, t, name, n, k, types, bad) {
    n = split("gpuir__cudart gpuir__emu gpuir__fault", types, " ")
    for (k = 1; k <= n; k++) {
        name = types[k]
        if (!(name in owner)) { print "FAIL sections: the table implementation " name " is not defined"; continue }
        bad = ""
        for (i = 1; i <= NR; i++)
            if (section[i] != owner[name] && index(code[i], "(" name " *)"))
                bad = bad ", " section[i] " (line " i ")"
        if (bad == "") print "PASS sections: a table\047s self is cast to " name " only in " owner[name]
        else print "FAIL sections: a table\047s self is cast to " name " outside " owner[name] ": " substr(bad, 3)
    }
}
# ---- a tool uses only the internal API: what api.internal defines and exposes ----
function banner_text(s,    i, line, text) {
    text = ""
    for (i = start[s] + 1; i <= NR && raw[i] ~ /^\/\//; i++) {
        line = raw[i]
        sub(/^\/\/[ \t]?/, "", line)
        text = text " " line
    }
    return text
}
function tool_check(tool,    text, p, n, k, items, w, exposed, line, t, name, bad, seen_bad, allowed, j) {
    if (!("api.internal" in start)) { print "FAIL sections: no api.internal section for " tool; return }
    text = banner_text("api.internal")
    p = index(text, "Exposes:")
    text = p ? substr(text, p + 8) : ""
    p = index(text, "Reads:")
    if (p) text = substr(text, 1, p - 1)
    gsub(/\([^)]*\)/, "", text)
    gsub(/ and /, ",", text)
    n = split(text, items, ",")
    for (k = 1; k <= n; k++) {
        w = items[k]
        gsub(/^[ \t]+|[ \t.]+$/, "", w)
        sub(/[ \t].*$/, "", w)
        if (w ~ /^(gpuir__|GPUIR__)/) exposed[w] = 1
    }
    in_block = 0
    bad = ""
    while ((getline line < tool) > 0) {
        t = strip(line)
        while (match(t, /(gpuir__|GPUIR__)[A-Za-z0-9_]*/)) {
            name = substr(t, RSTART, RLENGTH)
            t = substr(t, RSTART + RLENGTH)
            allowed = (name in owner && owner[name] == "api.internal") || (name in exposed)
            for (w in exposed)
                if (w ~ /\*$/ && index(name, substr(w, 1, length(w) - 1)) == 1) allowed = 1
            if (!allowed && !(name in seen_bad)) { seen_bad[name] = 1; bad = bad ", " name }
        }
    }
    close(tool)
    if (bad == "") print "PASS sections: " tool " uses no internals but the internal API (api.internal)"
    else print "FAIL sections: " tool " uses internals outside the internal API (api.internal): " substr(bad, 3)
}
# ---- pass 4: the sections each banner lists ----
function list_sections(s, word,    k) {
    sub(/\047s$/, "", word)
    for (k = 1; k <= nsec; k++)
        if (word == order[k] || ("pass." word) == order[k] ||
            (word ~ /\*$/ && index(order[k], substr(word, 1, length(word) - 1)) == 1)) lists[s, order[k]] = 1
}
function listed(s,    i, text, line, p, items, n, k, w, depth, c, j, clean) {
    text = ""
    for (i = start[s] + 1; i <= NR && raw[i] ~ /^\/\//; i++) {
        line = raw[i]
        sub(/^\/\/[ \t]?/, "", line)
        text = text " " line
    }
    p = index(text, "Reads:")
    if (!p) return -1
    text = substr(text, p + 6)
    p = index(text, "Writes:")
    if (p) text = substr(text, 1, p - 1)
    clean = ""
    depth = 0
    for (j = 1; j <= length(text); j++) {
        c = substr(text, j, 1)
        if (c == "(") depth++
        else if (c == ")") depth--
        else if (depth == 0) clean = clean c
    }
    p = match(clean, /\.([ \t]|$)/)
    if (p) clean = substr(clean, 1, p - 1)
    n = split(clean, items, ",")
    for (k = 1; k <= n; k++) {
        w = items[k]
        sub(/^[ \t]+/, "", w)
        sub(/[ \t].*$/, "", w)
        list_sections(s, w)
    }
    return 1
}
END {
    if (nsec == 0) { print "FAIL sections: no // >>name markers in " FILENAME; exit }
    definitions()
    uses()
    if (offers) {           # what each section offers the others: its interface, derived
        for (k = 1; k <= nsec; k++) if (order[k] in offer) print order[k] ":" offer[order[k]]
        exit
    }
    if (probe == "") self_casts()
    if (probe == "" && tool != "") tool_check(tool)
    for (k = 1; k <= nsec; k++) {
        s = order[k]
        bad = ""
        if (listed(s) < 0 && s != "api") bad = bad "; its banner has no \"Reads:\" line"
        for (m = 1; m <= nsec; m++) {
            o = order[m]
            if (o == s || o == "api") continue
            if (((s SUBSEP o) in used) && !((s SUBSEP o) in lists))
                bad = bad "; uses " o " (" kind[s, o] " " used[s, o] ", line " first_line[s, o] ") but its Reads: line does not list it"
            if (!((s SUBSEP o) in used) && ((s SUBSEP o) in lists))
                bad = bad "; its Reads: line lists " o ", of which it uses nothing"
        }
        if (verbose) for (m = 1; m <= nsec; m++) if ((s SUBSEP order[m]) in used) print "  " s " -> " order[m] ":" all[s, order[m]]
        if (bad == "") { n = 0; for (m = 1; m <= nsec; m++) if ((s SUBSEP order[m]) in used) n++
                         print "PASS sections: " s " reads what its banner says (" n " sections)" }
        else print "FAIL sections: " s ": " substr(bad, 3)
    }
}
' verbose="${SECTIONS_VERBOSE:-0}" offers="${SECTIONS_OFFERS:-0}" probe="$2" tool="$3" "$1"
}
check "$file" "" "${SECTIONS_TOOL-tools/gpuir-bench.c}"
[ -n "$SECTIONS_FILE" ] || [ "${SECTIONS_OFFERS:-0}" != 0 ] && exit 0
# The check can fail: a copy of gpuir.h where pass.fuse (its last lines)
# uses rt.cache's gpuir__cache_key must fail, naming both.
probe=$(mktemp "${TMPDIR:-/tmp}/gpuir-sections-XXXXXX") || exit 1
trap 'rm -f "$probe"' EXIT
sed '/^\/\/ >>pass.bufferize$/i\
static void gpuir__sections_probe(void) { (void)gpuir__cache_key; }' "$file" > "$probe"
if check "$probe" probe | grep -q '^FAIL sections: pass.fuse: uses rt.cache (function gpuir__cache_key, '
then echo "PASS sections: a use of rt.cache added to pass.fuse fails the check"
else echo "FAIL sections: a use of rt.cache added to pass.fuse went unnoticed"; fi
