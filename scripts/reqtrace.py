#!/usr/bin/env python3
"""reqtrace: the requirements matrix of the RPC-over-RDMA specifications.

Every sentence of the specification texts in ../shared/specs that holds a
BCP 14 key word (MUST, MUST NOT, REQUIRED, SHALL, SHALL NOT, SHOULD,
SHOULD NOT, RECOMMENDED, NOT RECOMMENDED, MAY, OPTIONAL) is a requirement.
Code, tests and docs/requirements/exceptions.md cite requirements with
comments in duvet's annotation format (https://github.com/awslabs/duvet):

    //= rfc5666bis-04#section-5.5
    //# The rdma_vers field MUST contain the same version that was in the
    //# rdma_vers field in the failing request.

Optional meta lines after the first: `//= type=implementation|test|
implication|exception` and `//= reason=KIND: text` (exceptions). The
type defaults to `test` in a file under a `tests/` directory and to
`implementation` elsewhere; `implication` counts as both (correct by
construction, e.g. enforced by a type). A requirement is covered by an
annotation whose quote holds all of the requirement's key words.

    python3 scripts/reqtrace.py check            # CI: fails on bad citations
                                                 # or uncovered MUSTs, prints counts
    python3 scripts/reqtrace.py report [--out F] # Markdown report (default
                                                 # target/requirements/report.md)
    python3 scripts/reqtrace.py list SPEC [SECTION]  # the requirements, with status
    python3 scripts/reqtrace.py selftest         # the checker's own rules

Why not duvet itself: see docs/requirements.md.
"""

import argparse
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# id -> (file in the specs directory, title shown in the report)
SPECS = {
    "rfc5666bis-04": (
        "rpcrdma-v1-rfc5666bis-04.md",
        "RFC 8166 (RPC-over-RDMA Version One), as draft-ietf-nfsv4-rfc5666bis-04",
    ),
    "rfc8167": (
        "rpcrdma-bidirectional-rfc8167.txt",
        "RFC 8167 (Bidirectional RPC-over-RDMA)",
    ),
    "rfc8797": (
        "rpcrdma-cm-private-data-rfc8797.txt",
        "RFC 8797 (RDMA-CM private data), as draft-ietf-nfsv4-rpcrdma-cm-pvt-data-08",
    ),
    "draft-cel-01": (
        "rpcrdma-version-two-draft-cel-01.txt",
        "draft-cel-nfsv4-rpcrdma-version-two-01 (RPC-over-RDMA Version Two)",
    ),
}

# Specifications named by the issue whose text we do not have.
NOT_CHECKED = {
    "rfc8267": "RFC 8267 (NFS Upper-Layer Bindings to RPC-over-RDMA Version One): its "
    "text is not in ../shared/specs and CI cannot fetch it, so its requirements cannot be "
    "extracted or citations checked; the binding is implemented in crates/nfs3 and "
    "crates/xdrgen/xdr/nfs3.x and described in docs/nfs.md, unchecked by this matrix.",
}

SOURCE_DIRS = ["crates"]
EXTRA_SOURCES = ["docs/requirements/exceptions.md"]

KEYWORD_RE = re.compile(
    r"\b(MUST NOT|MUST|SHALL NOT|SHALL|REQUIRED|SHOULD NOT|SHOULD|NOT RECOMMENDED|"
    r"RECOMMENDED|MAY|OPTIONAL)\b"
)
LEVEL = {
    "MUST": "MUST", "MUST NOT": "MUST", "SHALL": "MUST", "SHALL NOT": "MUST",
    "REQUIRED": "MUST", "SHOULD": "SHOULD", "SHOULD NOT": "SHOULD",
    "RECOMMENDED": "SHOULD", "NOT RECOMMENDED": "SHOULD", "MAY": "MAY", "OPTIONAL": "MAY",
}
LEVELS = ["MUST", "SHOULD", "MAY"]
TYPES = ["implementation", "test", "implication", "exception"]
KINDS = {
    "not-for-implementations": "addressed to specification authors, Upper-Layer Binding "
    "authors, IANA or the RDMA fabric, not to an implementation",
    "summary": "restates requirements that the matrix lists one by one",
    "not-implemented": "an optional mechanism or a protocol element we do not implement",
    "not-applicable": "applies only to a kind of implementation we are not (kernel, "
    "hardware, other ULPs)",
    "below-us": "done by the RDMA provider or connection manager beneath the RPC-over-RDMA "
    "code",
    "reading": "our reading differs from the text; the spec note named says why",
    "untested": "implemented, but no test of ours checks it",
    "deviation": "our behaviour deviates; listed so it is not hidden",
}


# ---------------------------------------------------------------------------
# Specification texts


def normalize(text):
    """The text as a single line: markdown link syntax, emphasis and code
    marks removed, words hyphenated across lines joined, whitespace runs one
    space."""
    text = re.sub(r"\[([^\]]*)\]\(#[^)]*\)", r"\1", text)  # [x](#) -> x
    text = text.replace("\\[", "[").replace("\\]", "]")
    text = text.replace("`", "").replace("**", "")
    text = re.sub(r"(\w)-[ \t]*\n\s*(\w)", r"\1-\2", text)  # Internet-\nDrafts
    return re.sub(r"\s+", " ", text).strip()


PAGE_LINE = [
    re.compile(r"\[Page \d+\]\s*$"),
    re.compile(r"^\f"),
    re.compile(r"^\^L$"),
    re.compile(r"^RFC \d+ "),
    re.compile(r"^Internet-Draft\s{2,}"),
]
HEADING_RE = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+([A-Z].*)$")


def heading_of(line):
    """(id, title) when the line looks like a numbered section heading."""
    plain = re.sub(r"\[([^\]]*)\]\(#[^)]*\)", r"\1", line).replace("**", "").strip()
    if "\t" in line or ". . ." in plain or len(plain) > 90:
        return None
    m = HEADING_RE.match(plain)
    if not m:
        return None
    sid, title = m.group(1), m.group(2).rstrip()
    if title.endswith((".", ",", ";")):
        return None
    return sid, title


def follows(prev, cur):
    """A section number that may follow `prev` in document order."""
    c = [int(x) for x in cur.split(".")]
    if prev is None:
        return c == [1]
    p = [int(x) for x in prev.split(".")]
    if c == p + [1]:
        return True
    for depth in range(len(p), 0, -1):
        if c == p[: depth - 1] + [p[depth - 1] + 1]:
            return True
    return False


class Requirement:
    def __init__(self, spec, section, index, start, end, keywords):
        self.spec, self.section, self.index = spec, section, index
        self.start, self.end = start, end  # in the section's normalized text
        self.keywords = keywords  # [(pos, word)]
        self.level = min((LEVEL[w] for _, w in keywords), key=LEVELS.index)
        self.text = None
        self.annotations = defaultdict(list)

    @property
    def implemented(self):
        return bool(self.annotations["implementation"] or self.annotations["implication"])

    @property
    def tested(self):
        return bool(self.annotations["test"] or self.annotations["implication"])

    @property
    def excepted(self):
        return bool(self.annotations["exception"])

    @property
    def complete(self):
        return (self.implemented and self.tested) or self.excepted

    def words(self):
        seen = []
        for _, w in self.keywords:
            if w not in seen:
                seen.append(w)
        return ", ".join(seen)


class Section:
    def __init__(self, sid, title):
        self.id, self.title = sid, title
        self.lines = []
        self.text = ""
        self.requirements = []


SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)[.!?](?=\s|$)")


def sentences(text):
    """Spans of sentences: a period followed by a space ends one; so does a
    bullet (' o ' or ' - o ') that starts a list item."""
    bounds = [0]
    for m in SENTENCE_END.finditer(text):
        bounds.append(m.end())
    for m in re.finditer(r"(?:^| )(?:- )?o (?=[A-Z\"'])", text):
        bounds.append(m.start())
    bounds.append(len(text))
    bounds = sorted(set(bounds))
    spans = []
    for a, b in zip(bounds, bounds[1:]):
        while a < b and text[a] == " ":
            a += 1
        if a < b:
            spans.append((a, b))
    return spans


class Spec:
    def __init__(self, sid, path, title):
        self.id, self.path, self.title = sid, path, title
        self.sections = {}
        self.order = []
        with open(path, encoding="utf-8") as f:
            raw = f.read().split("\n")
        cur = None
        prev = None
        for line in raw:
            if any(p.search(line) for p in PAGE_LINE):
                continue
            h = heading_of(line)
            if h and follows(prev, h[0]):
                prev = h[0]
                cur = Section(h[0], h[1])
                self.sections["section-" + h[0]] = cur
                self.order.append(cur)
                continue
            if cur is not None:
                cur.lines.append(line)
        for sec in self.order:
            sec.text = normalize("\n".join(sec.lines))
            self.extract(sec)

    def extract(self, sec):
        text = sec.text
        kws = []
        for m in KEYWORD_RE.finditer(text):
            before = text[m.start() - 1] if m.start() > 0 else ""
            after = text[m.end()] if m.end() < len(text) else ""
            if before == '"' or after == '"':
                continue  # a definition ("MUST"), as in the Requirements Language
            kws.append((m.start(), m.group(1)))
        for a, b in sentences(text):
            mine = [(p, w) for p, w in kws if a <= p < b]
            if mine and "/// " in text[a:b]:
                continue  # the licence inside an XDR code component
            if mine:
                r = Requirement(self, sec, len(sec.requirements) + 1, a, b, mine)
                r.text = text[a:b]
                sec.requirements.append(r)

    def requirements(self):
        for sec in self.order:
            yield from sec.requirements


def load_specs(specs_dir):
    specs = {}
    for sid, (fname, title) in SPECS.items():
        path = os.path.join(specs_dir, fname)
        if not os.path.exists(path):
            sys.exit(f"reqtrace: {path} not found (pass --specs DIR)")
        specs[sid] = Spec(sid, path, title)
    return specs


# ---------------------------------------------------------------------------
# Annotations


class Annotation:
    def __init__(self, path, line):
        self.path, self.line = path, line
        self.target = None
        self.meta = {}
        self.quote_lines = []
        self.type = None

    @property
    def where(self):
        return f"{self.path}:{self.line}"


ANNO_RE = re.compile(r"^\s*//([=#])(?: ?)(.*)$")


def scan_file(path, rel):
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (UnicodeDecodeError, OSError):
        return out
    cur = None
    for n, line in enumerate(lines, 1):
        m = ANNO_RE.match(line)
        if not m:
            if cur:
                out.append(cur)
                cur = None
            continue
        kind, body = m.group(1), m.group(2).rstrip()
        if kind == "=":
            if cur and cur.quote_lines:
                out.append(cur)
                cur = None
            if cur is None:
                cur = Annotation(rel, n)
                cur.target = body.strip()
            elif "=" in body:
                k, v = body.split("=", 1)
                cur.meta[k.strip()] = v.strip()
            else:
                cur.meta.setdefault("_bad", []).append(body)
        else:
            if cur is None:
                cur = Annotation(rel, n)
                cur.meta["_orphan"] = True
            cur.quote_lines.append(body)
    if cur:
        out.append(cur)
    default = "test" if "/tests/" in "/" + rel else "implementation"
    for a in out:
        a.type = a.meta.get("type", default)
    return out


def scan_sources():
    annos = []
    for d in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, d)):
            dirnames[:] = [x for x in dirnames if x not in ("target", ".git")]
            for fn in sorted(filenames):
                if fn.endswith(".rs"):
                    p = os.path.join(dirpath, fn)
                    annos += scan_file(p, os.path.relpath(p, ROOT))
    for rel in EXTRA_SOURCES:
        p = os.path.join(ROOT, rel)
        if os.path.exists(p):
            annos += scan_file(p, rel)
    return annos


def resolve(specs, annos):
    """Attach annotations to requirements; return the list of errors."""
    errors = []
    for a in annos:
        if a.meta.get("_orphan"):
            errors.append(f"{a.where}: quote lines (//#) without a target line (//=)")
            continue
        if a.meta.get("_bad"):
            errors.append(f"{a.where}: meta lines must be key=value: {a.meta['_bad']}")
        if not a.quote_lines:
            errors.append(f"{a.where}: citation without a quote (//# lines)")
            continue
        if a.type not in TYPES:
            errors.append(f"{a.where}: unknown type {a.type!r} (one of {', '.join(TYPES)})")
            continue
        if a.type == "exception":
            reason = a.meta.get("reason", "")
            kind = reason.split(":", 1)[0].strip() if ":" in reason else ""
            if kind not in KINDS:
                errors.append(
                    f"{a.where}: an exception needs reason=KIND: why, KIND one of "
                    f"{', '.join(KINDS)}"
                )
                continue
            a.kind = kind
        if "#" not in a.target:
            errors.append(f"{a.where}: target {a.target!r} is not SPEC#section-N")
            continue
        sid, sec_id = a.target.split("#", 1)
        if sid in NOT_CHECKED:
            errors.append(f"{a.where}: {sid} is not checked (no text): cite it in prose")
            continue
        spec = specs.get(sid)
        if spec is None:
            errors.append(f"{a.where}: unknown specification {sid!r} (one of {', '.join(specs)})")
            continue
        sec = spec.sections.get(sec_id)
        if sec is None:
            errors.append(f"{a.where}: {sid} has no {sec_id}")
            continue
        quote = normalize("\n".join(a.quote_lines))
        pos = sec.text.find(quote)
        if pos < 0:
            errors.append(
                f"{a.where}: the quote is not in {sid} {sec_id}: {quote[:100]!r}"
                + ("..." if len(quote) > 100 else "")
            )
            continue
        end = pos + len(quote)
        hit = False
        for r in sec.requirements:
            if all(pos <= p and p + len(w) <= end for p, w in r.keywords):
                r.annotations[a.type].append(a)
                hit = True
        if not hit:
            a.nonnormative = True
    return errors


# ---------------------------------------------------------------------------
# Output


def counts(spec):
    c = defaultdict(int)
    for r in spec.requirements():
        c["requirements"] += 1
        c[r.level] += 1
        c["implemented"] += r.implemented
        c["tested"] += r.tested
        c["exceptions"] += r.excepted
        c["complete"] += r.complete
        if not r.complete:
            c["open " + r.level] += 1
    return c


def status(r):
    if r.implemented and r.tested:
        s = "implemented, tested"
        if r.excepted:
            s += " (+ exception)"
        return s
    if r.excepted:
        kinds = sorted({a.kind for a in r.annotations["exception"]})
        return "exception: " + ", ".join(kinds)
    if r.implemented:
        return "implemented, NOT TESTED"
    if r.tested:
        return "tested, NOT IMPLEMENTED"
    return "OPEN"


def summary_table(specs):
    rows = ["| specification | requirements (MUST/SHOULD/MAY) | implemented | tested | "
            "exceptions | complete | open MUST |", "|---|---|---|---|---|---|---|"]
    for spec in specs.values():
        c = counts(spec)
        rows.append(
            f"| {spec.id} | {c['requirements']} ({c['MUST']}/{c['SHOULD']}/{c['MAY']}) | "
            f"{c['implemented']} | {c['tested']} | {c['exceptions']} | {c['complete']} | "
            f"{c['open MUST']} |"
        )
    for sid, why in NOT_CHECKED.items():
        rows.append(f"| {sid} | not checked | – | – | – | – | – |")
    return rows


def cmd_check(specs, annos, errors):
    for sid, spec in specs.items():
        for r in spec.requirements():
            if r.level == "MUST" and not r.complete:
                errors.append(
                    f"{sid} {r.section.id} #{r.index} ({r.words()}) has "
                    f"{status(r).lower()}: {r.text[:110]}"
                )
    print("reqtrace: requirements per specification "
          "(sentences with BCP 14 key words; docs/requirements.md)")
    print(f"{'spec':<14}{'reqs':>6}{'MUST':>6}{'SHOULD':>8}{'MAY':>5}"
          f"{'impl':>7}{'tested':>8}{'except':>8}{'complete':>10}")
    for sid, spec in specs.items():
        c = counts(spec)
        print(f"{sid:<14}{c['requirements']:>6}{c['MUST']:>6}{c['SHOULD']:>8}{c['MAY']:>5}"
              f"{c['implemented']:>7}{c['tested']:>8}{c['exceptions']:>8}{c['complete']:>10}")
    for sid in NOT_CHECKED:
        print(f"{sid:<14}  not checked (no text in the specs directory)")
    n = len(annos)
    print(f"{n} citations in {len({a.path for a in annos})} files")
    if errors:
        for e in errors:
            print("error: " + e, file=sys.stderr)
        print(f"reqtrace: {len(errors)} errors", file=sys.stderr)
        return 1
    print("reqtrace: every citation quotes its specification; every MUST is covered")
    return 0


def link(a):
    return f"[{a.path}:{a.line}](../../{a.path}#L{a.line})"


def cmd_report(specs, annos, errors, out):
    lines = ["# Requirements matrix", "",
             "Generated by `python3 scripts/reqtrace.py report` from the specification "
             "texts and the citations in the tree (docs/requirements.md says how). "
             "A requirement is a sentence holding a BCP 14 key word; it is complete when "
             "cited at code and at a test, or listed as an exception.", ""]
    lines += summary_table(specs)
    lines.append("")
    for sid, why in NOT_CHECKED.items():
        lines += [f"**{sid}: not checked.** {why}", ""]
    if errors:
        lines += ["## Errors", ""] + [f"- {e}" for e in errors] + [""]
    kinds = defaultdict(int)
    for spec in specs.values():
        for r in spec.requirements():
            for a in r.annotations["exception"]:
                kinds[a.kind] += 1
    lines += ["## Exceptions by kind", "", "| kind | meaning | citations |", "|---|---|---|"]
    for k, meaning in KINDS.items():
        lines.append(f"| {k} | {meaning} | {kinds[k]} |")
    lines.append("")
    for spec in specs.values():
        lines += [f"## {spec.title}", "", f"Text: `{os.path.basename(spec.path)}`.", "",
                  "| section | MUST | SHOULD | MAY | implemented and tested | exceptions | open |",
                  "|---|---|---|---|---|---|---|"]
        for sec in spec.order:
            rs = sec.requirements
            if not rs:
                continue
            lvl = {k: sum(r.level == k for r in rs) for k in LEVELS}
            both = sum(r.implemented and r.tested for r in rs)
            exc = sum(r.excepted and not (r.implemented and r.tested) for r in rs)
            open_ = sum(not r.complete for r in rs)
            lines.append(f"| §{sec.id} {sec.title} | {lvl['MUST']} | {lvl['SHOULD']} | "
                         f"{lvl['MAY']} | {both} | {exc} | {open_} |")
        lines.append("")
        for sec in spec.order:
            if not sec.requirements:
                continue
            lines += [f"### {spec.id} §{sec.id} {sec.title}", ""]
            for r in sec.requirements:
                lines.append(f"{r.index}. **{r.level}** ({r.words()}) — *{status(r)}*  ")
                lines.append(f"   > {r.text}")
                lines.append("")
                for t in TYPES:
                    for a in r.annotations[t]:
                        extra = ""
                        if t == "exception":
                            extra = " — " + a.meta.get("reason", "")
                        lines.append(f"   - {t}: {link(a)}{extra}")
                lines.append("")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"reqtrace: wrote {os.path.relpath(out)}")
    return 0


def cmd_list(specs, sid, section):
    spec = specs[sid]
    for sec in spec.order:
        if section and sec.id != section and not sec.id.startswith(section + "."):
            continue
        for r in sec.requirements:
            print(f"{sid}#section-{sec.id} #{r.index} {r.level} [{status(r)}]\n    {r.text}")
    return 0


def cmd_selftest():
    """The checker's own rules on a made-up specification and sources."""
    import tempfile

    global ROOT, SOURCE_DIRS, EXTRA_SOURCES, SPECS
    saved = (ROOT, SOURCE_DIRS, EXTRA_SOURCES, SPECS)
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "specs"))
        os.makedirs(os.path.join(tmp, "src", "tests"))
        with open(os.path.join(tmp, "specs", "t.txt"), "w") as f:
            f.write("Table of Contents\n1. Intro . . . . 1\n1. Intro\nThe key words \"MUST\" "
                    "are defined.\n2. Rules\nA sender MUST send hyphen-\nated words. A receiver "
                    "SHOULD\nlisten. Either MAY nap.\nT [Page 1]\n^L\nRFC 1 T\n2.1. More\n"
                    "It is REQUIRED\nto stop.\n")
        src = (
            "//= t#section-2\n//# A sender MUST send hyphen-\n//# ated words.\nfn a() {}\n"
            "//= t#section-2\n//= type=exception\n//= reason=untested: no test\n"
            "//# A receiver SHOULD listen.\n"
            "//= t#section-2.1\n//# It is REQUIRED to jump.\n"
            "//= t#section-9\n//# nothing\n"
            "//= t#section-2\n//= type=exception\n//# Either MAY nap.\n"
        )
        with open(os.path.join(tmp, "src", "a.rs"), "w") as f:
            f.write(src)
        with open(os.path.join(tmp, "src", "tests", "b.rs"), "w") as f:
            f.write("//= t#section-2\n//# A sender MUST send hyphen-ated words.\n")
        ROOT, SOURCE_DIRS, EXTRA_SOURCES = tmp, ["src"], []
        SPECS = {"t": ("t.txt", "T")}
        try:
            specs = load_specs(os.path.join(tmp, "specs"))
            t = specs["t"]
            assert [s.id for s in t.order] == ["1", "2", "2.1"], [s.id for s in t.order]
            reqs = list(t.requirements())
            assert [(r.section.id, r.level) for r in reqs] == [
                ("2", "MUST"), ("2", "SHOULD"), ("2", "MAY"), ("2.1", "MUST")], reqs
            annos = scan_sources()
            errors = resolve(specs, annos)
            assert any("not in t section-2.1" in e for e in errors), errors
            assert any("has no section-9" in e for e in errors), errors
            assert any("needs reason=KIND" in e for e in errors), errors
            assert len(errors) == 3, errors
            must, should, may, stop = reqs
            assert must.implemented and must.tested and must.complete
            assert should.excepted and not may.excepted and not stop.complete
        finally:
            ROOT, SOURCE_DIRS, EXTRA_SOURCES, SPECS = saved
    print("reqtrace: selftest passed")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--specs", default=os.path.join(ROOT, "..", "shared", "specs"))
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check")
    sub.add_parser("selftest")
    rp = sub.add_parser("report")
    rp.add_argument("--out", default=os.path.join(ROOT, "target", "requirements", "report.md"))
    lp = sub.add_parser("list")
    lp.add_argument("spec", choices=list(SPECS))
    lp.add_argument("section", nargs="?")
    args = ap.parse_args()
    if args.cmd == "selftest":
        return cmd_selftest()
    specs = load_specs(args.specs)
    annos = scan_sources()
    errors = resolve(specs, annos)
    if args.cmd == "check":
        return cmd_check(specs, annos, errors)
    if args.cmd == "report":
        return cmd_report(specs, annos, errors, args.out)
    return cmd_list(specs, args.spec, args.section)


if __name__ == "__main__":
    sys.exit(main())
