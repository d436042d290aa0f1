#!/usr/bin/env python3
"""Moves whole sections of gpuir.h into a given order, and the table of
contents with them.

    tools/dev/reorder-sections.py [--file gpuir.h] [--check] NAME NAME...

A section is everything from its banner rule (the `/* ====...==== */` line
just above its `// >>NAME` marker, or the marker itself) to the next
section's start; the last section of the file ends before the line
`#endif /* GPUIR_IMPLEMENTATION_DONE */`. The sections named must be
adjacent in the file (in any order) and are rewritten, in the order given,
into the lines they occupy; every other line stays where it is. The TOC
lines (`     >>NAME ...` under TABLE OF CONTENTS) of those sections are
permuted the same way. Running it again changes nothing (idempotent).

It fails loudly, changing nothing, when a name is not a marker of the file
or is given twice, when the sections are not adjacent, or when the TOC
does not list them. --check only says whether the file is in that order
(status 1 when not). Without names it uses the order below: the two
backends (and the fault wrapper over the table) before the generic rt.exec,
as sokol_gfx puts its backends before the generic layer.
"""
import re
import sys

DEFAULT_ORDER = ["rt.driver", "rt.cache", "rt.emu", "rt.faults", "rt.exec"]
RULE = re.compile(r"^/\* =+ \*/$")
MARKER = re.compile(r"^// >>([A-Za-z0-9_.-]+)$")
END = "#endif /* GPUIR_IMPLEMENTATION_DONE */"


def fail(msg):
    sys.stderr.write("reorder-sections: %s\n" % msg)
    sys.exit(2)


def sections(lines):
    """name -> [start, end) line indices, in file order."""
    found = []
    for i, line in enumerate(lines):
        m = MARKER.match(line)
        if m:
            start = i - 1 if i > 0 and RULE.match(lines[i - 1]) else i
            found.append((m.group(1), start))
    if not found:
        fail("no // >>NAME markers")
    names = [n for n, _ in found]
    if len(set(names)) != len(names):
        fail("a marker appears twice: %s" % sorted(n for n in names if names.count(n) > 1))
    try:
        last_end = lines.index(END, found[-1][1])
    except ValueError:
        fail("no line '%s' after the last section" % END)
    spans = {}
    for k, (name, start) in enumerate(found):
        end = found[k + 1][1] if k + 1 < len(found) else last_end
        spans[name] = (start, end)
    return names, spans


def toc_lines(lines):
    """name -> index of its line in the table of contents."""
    try:
        top = next(i for i, l in enumerate(lines) if "TABLE OF CONTENTS" in l)
    except StopIteration:
        fail("no TABLE OF CONTENTS")
    toc = {}
    for i in range(top + 1, len(lines)):
        if not lines[i].strip():
            break
        m = re.match(r"^ *>>([A-Za-z0-9_.-]+)", lines[i])
        if m:
            toc[m.group(1)] = i
    return toc


def reorder(lines, order):
    names, spans = sections(lines)
    missing = [n for n in order if n not in spans]
    if missing:
        fail("no section marked // >>%s" % ", // >>".join(missing))
    if len(set(order)) != len(order):
        fail("a section is named twice")
    in_file = [n for n in names if n in order]
    first, last = names.index(in_file[0]), names.index(in_file[-1])
    if names[first:last + 1] != in_file:
        fail("the sections are not adjacent: %s lie between them" %
             ", ".join(n for n in names[first:last + 1] if n not in order))
    toc = toc_lines(lines)
    unlisted = [n for n in order if n not in toc]
    if unlisted:
        fail("the table of contents does not list %s" % ", ".join(unlisted))
    toc_slots = sorted(toc[n] for n in order)
    if toc_slots != list(range(toc_slots[0], toc_slots[0] + len(order))):
        fail("the table of contents does not list the sections together")
    lo, hi = spans[in_file[0]][0], spans[in_file[-1]][1]
    body = []
    for n in order:
        start, end = spans[n]
        chunk = lines[start:end]
        if chunk[-1].strip():                     # a blank line between sections
            chunk = chunk + [""]
        body += chunk
    out = lines[:lo] + body + lines[hi:]
    toc_text = [lines[toc[n]] for n in order]
    for slot, text in zip(toc_slots, toc_text):
        out[slot] = text
    return out


def main(argv):
    path, check, order = "gpuir.h", False, []
    args = iter(argv)
    for a in args:
        if a == "--file":
            path = next(args, None) or fail("--file needs a path")
        elif a == "--check":
            check = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a.startswith("-"):
            fail("unknown option %s" % a)
        else:
            order.append(a)
    order = order or DEFAULT_ORDER
    with open(path) as f:
        text = f.read()
    lines = text.split("\n")
    out = reorder(lines, order)
    new = "\n".join(out)
    if check:
        print("in order" if new == text else "not in order")
        return 0 if new == text else 1
    if new != text:
        with open(path, "w") as f:
            f.write(new)
    print("%s: %s" % (path, " ".join(order)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
