#!/usr/bin/env python3
"""Prints docs/design.md's table of where each paper's rule lives, from the citations in
the code (`// kMAF Eq. 6`, `//! SAMMU §2.7.1`, `MApp §3.2`, the trace paper's §III-B):
each cited rule with the items (functions, types, constants) that the comment sits on.
`make docs` runs `scripts/paper_rules.py --write docs/design.md`, which puts it between
the file's paper-rules markers."""
import collections, os, re, sys

CITE = re.compile(r"(kMAF|SAMMU|Minas|MApp|MAi|[Tt]race[- ]mapping paper|[Tt]race paper)"
                  r"[^\n]{0,50}?(Eq\.? ?[0-9]+|§ ?[0-9.IVX\-A-Z]+|Fig\.? ?[0-9]+|Table ?[0-9]+)")
ITEM = re.compile(r"^\s*(pub(\([a-z]+\))? )?(const |static )?"
                  r"(fn|struct|enum|const|static|impl|mod|trait|type)\b\s*([A-Za-z_0-9<>:]+)?")
PAPERS = {"kMAF": "kMAF (`kmaf-pact14.txt`)",
          "trace paper": "The trace-mapping paper (`trace-based-mapping-edmonds.txt`)",
          "SAMMU": "SAMMU (`sammu-tompecs21.txt`)",
          "Minas": "Minas, MAi and MApp (`minas-geophysics.txt`)"}
ALIAS = {"MAi": "Minas", "MApp": "Minas", "Trace paper": "trace paper",
         "trace-mapping paper": "trace paper", "Trace-mapping paper": "trace paper",
         "trace mapping paper": "trace paper"}


def indent(line):
    return len(line) - len(line.lstrip())


def item_at(line):
    mm = ITEM.match(line)
    return (mm.group(4), mm.group(5).rstrip(":<")) if mm and mm.group(5) else None


def sits_on(lines, i):
    """The item a comment at line i is about: the next item, unless that one is less
    indented (past the body the comment sits in: a statement's or a field's comment),
    then the item whose body holds the comment."""
    at = indent(lines[i])
    for j in range(i, min(i + 25, len(lines))):
        it = item_at(lines[j])
        if it:
            if indent(lines[j]) >= at:
                return it
            break
    for j in range(i - 1, -1, -1):
        it = item_at(lines[j])
        if it and indent(lines[j]) < at:
            return it
    return None


def citations(root):
    for top in ("crates", "src", "include"):
        for dp, dn, fn in os.walk(os.path.join(root, top)):
            dn[:] = sorted(d for d in dn if d not in ("target", "tests", "benches"))
            for f in sorted(fn):
                if not f.endswith((".rs", ".c", ".h")) or f.endswith("_tests.rs"):
                    continue
                p = os.path.join(dp, f)
                lines = open(p, errors="replace").read().split("\n")
                for i, l in enumerate(lines):
                    if not ("//" in l or "/*" in l or l.strip().startswith("*")):
                        continue
                    for m in CITE.finditer(l):
                        item = None
                        if not l.strip().startswith("//!"):
                            item = sits_on(lines, i)
                        yield m.group(1), m.group(2), os.path.relpath(p, root), item, i + 1


def table(root):
    by = {k: collections.OrderedDict() for k in PAPERS}
    for cited, ref, f, item, line in citations(root):
        paper = ALIAS.get(cited, cited)
        cited = cited if cited in ("MAi", "MApp") else paper
        if item and ("test" in item[1].lower() or item[0] == "mod"):
            continue
        if item is None:
            what = "module doc" if line <= 12 else "line %d" % line
        elif item[0] == "impl":
            what = "`impl %s`" % item[1]
        else:
            what = "`%s`" % item[1]
        ref = re.sub(r"(Eq\.|Fig\.|Table) ?", r"\1 ", ref.replace("Table", "Table ")).rstrip(".")
        ref = re.sub(r"  +", " ", ref)
        name = "%s %s" % (cited, ref)
        files = by[paper].setdefault(name, collections.OrderedDict())
        items = files.setdefault(f, [])
        if what not in items:
            items.append(what)

    def key(r):
        r = r.split(" ")[-1] if not r.startswith("trace paper") else r[len("trace paper "):]
        kind = 0 if r.startswith("Eq") else 1 if r.startswith("§") else 2
        return kind, [int(x) for x in re.findall(r"[0-9]+", r)], r

    out = []
    for paper, title in PAPERS.items():
        out.append("\n### %s\n\n| rule | where (`file`: item) |\n|---|---|" % title)
        for ref in sorted(by[paper], key=key):
            locs = "; ".join("`%s`: %s" % (f, ", ".join(i)) for f, i in by[paper][ref].items())
            out.append("| %s | %s |" % (ref, locs))
    return "\n".join(out) + "\n"


def main(args):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    text = table(root)
    if args[:1] != ["--write"] or len(args) != 2:
        sys.stdout.write(text)
        return
    begin, end = "<!-- paper-rules: begin -->\n", "<!-- paper-rules: end -->"
    doc = open(args[1]).read()
    if begin not in doc or end not in doc:
        sys.exit("paper_rules: %s has no paper-rules markers" % args[1])
    head, rest = doc.split(begin, 1)
    open(args[1], "w").write(head + begin + text + end + rest.split(end, 1)[1])


main(sys.argv[1:])
