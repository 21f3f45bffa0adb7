#!/usr/bin/env python3
"""Keep the generated blocks of Markdown pages equal to what tpsim prints.

  docs_sync.py (--check | --write) --tpsim PATH [--root DIR] [PAGE.md ...]
  docs_sync.py --self-test --tpsim PATH [--root DIR]

A page holds marker blocks. Everything between a marker line and the next
`<!-- end tpsim -->` line is generated: --write replaces it with what the
command prints now, --check compares and lists every block that differs
with a unified diff. Every command runs from the repository root (--root,
by default the parent of this script's directory), so paths in markers and
in tpsim's messages are relative to it. The pages are docs/tutorial/*.md
and DEFAULT_PAGES unless PAGE.md arguments name others (relative to the
root, or absolute).

Markers (the command is split as a shell would, but nothing is expanded):

  <!-- tpsim explain CONFIG [EXPLAIN OPTIONS] -->
      `tpsim run CONFIG -o TMP` (exit 0 or 1: a run with an injected
      mistake differs from the reference and still writes its trace), then
      `tpsim explain TMP [EXPLAIN OPTIONS]`. With `--format md` its output
      is inserted as Markdown; otherwise inside a ```text fence. The trace
      lives in a temporary directory; explain does not print its path.
  <!-- tpsim run CONFIG [RUN OPTIONS] -->
      `tpsim run CONFIG -o TMP [RUN OPTIONS]`: its stderr (the summary,
      warnings, a diagnosis or an error) and its exit status, in a ```text
      fence, under the command line a reader would type.
  <!-- tpsim run-inline -->
      The next lines must be a ```json fence: that config is not a file
      under examples/ (it is meant to fail, and the `schema` test validates
      every config there), so it is given to `tpsim run -` on stdin, and
      tpsim names it `-`. The ```json fence is part of the marker, written
      by hand; the generated block (as for `tpsim run`) follows it.
  <!-- tpsim mesh ARGS -->, <!-- tpsim comm ARGS -->
      Their stdout, in a ```text fence, under the command line.
  <!-- tpsim config PATH -->
      The file's text, in a ```json fence.
  <!-- tpsim bounds-property -->
      The table of how tight the error bounds are, as Markdown: what the
      property test (tests/run/test_bounds_property.c, given with
      --bounds-property) measures over its configs, printed when it runs
      with TPSIM_BOUNDS_MARKDOWN=1 (it fails, exit 1, if a bound does not
      hold). docs/numerics.md holds it; that page is not a default page:
      `meson test bounds_docs` checks it, and
        docs_sync.py --write --tpsim build/src/tpsim \
          --bounds-property build/tests/test_bounds_property docs/numerics.md
      rewrites it.
  <!-- tpsim diff RUN_A RUN_B [DIFF OPTIONS] -->
      Runs both (exit 0 or 1), then `tpsim diff` of their traces (exit 0
      or 1), from the temporary directory so that the traces are named
      by their runs. A RUN is CONFIG[:NAME=VALUE]...: the config with
      those --set variables (examples/convergence/mlp.json:tp=8); its
      trace is CONFIG's stem and the settings (mlp_tp8.json), made once
      per sync. The command line in a ```text fence, then with `--format
      md` the Markdown as is, otherwise the output in the fence, and the
      exit status.
  <!-- tpsim plot OUT.svg RUN... [--label TEXT]... -->
      Runs each RUN, then `tpsim plot` of their traces into OUT.svg (a
      path from the root): the SVG is generated too, --check compares
      its bytes and --write rewrites it. The block is the command line and
      the image, linked relative to the page.

Exit status: 0 every block is current (or was rewritten), 1 --check found
drift, 2 trouble: a bad or unclosed marker, a missing file, a command that
failed (its stderr is shown). tpsim is deterministic, so the same binary
gives the same bytes; `meson test tutorial` runs --check, and
`meson test tutorial_drift` runs --self-test, which proves that --check
fails on an edited block and on a bad marker.
"""
import argparse
import difflib
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

END = "<!-- end tpsim -->"
# Pages outside docs/tutorial/ that hold generated blocks too.
DEFAULT_PAGES = ("docs/transformer.md", "examples/gpt_2block/README.md",
                 "docs/symbolic.md", "examples/gpt3_175b/README.md",
                 "docs/tp-vs-single-device.md", "docs/diff.md",
                 "examples/llama3_8b/README.md",
                 "examples/llama3_tiny/README.md", "docs/comparison.md")
MARKER = re.compile(r"^<!-- tpsim (.*?) -->\s*$")
VERBS = ("explain", "run", "run-inline", "mesh", "comm", "config", "diff",
         "plot", "bounds-property")


class BadMarker(Exception):
    """A marker that cannot be generated: exit 2."""


def fence(lang, text):
    if not text.endswith("\n"):
        text += "\n"
    return "```%s\n%s```\n" % (lang, text)


def run_tpsim(opts, args, stdin=None, ok=(0,)):
    proc = subprocess.run([opts.tpsim] + args, cwd=opts.root,
                          input=stdin, capture_output=True, text=True)
    if proc.returncode not in ok:
        raise BadMarker("tpsim %s exited %d:\n%s" % (
            " ".join(shlex.quote(a) for a in args), proc.returncode,
            proc.stderr))
    return proc


def shown(args):
    return " ".join(shlex.quote(a) for a in args)


def gen_run(opts, args, tmp, stdin=None):
    """A run's stderr and status under the command line."""
    config, rest = args[0], args[1:]
    if "--stats" in rest:
        raise BadMarker("--stats prints timings, which are not stable")
    proc = run_tpsim(opts, ["run", config, "-o", os.path.join(tmp, "t.json")]
                     + rest, stdin=stdin, ok=(0, 1, 2))
    cmd = "$ tpsim run %s -o trace.json" % shown([config] + rest)
    if stdin is not None:
        cmd += "    # the config above on stdin"
    return fence("text", "%s\n%s[exit status %d]\n"
                 % (cmd, proc.stderr, proc.returncode))


def run_trace(opts, spec, tmp):
    """The trace of RUN (CONFIG[:NAME=VALUE]...) in tmp, made once: its
    file name."""
    parts = spec.split(":")
    config, sets = parts[0], parts[1:]
    for s in sets:
        if "=" not in s:
            raise BadMarker("run %r: expected CONFIG[:NAME=VALUE]..." % spec)
    name = os.path.splitext(os.path.basename(config))[0] + "".join(
        "_" + s.replace("=", "") for s in sets) + ".json"
    made = opts.traces.get(name)
    if made is not None and made != spec:
        raise BadMarker("runs %r and %r make the same trace name %s"
                        % (made, spec, name))
    if made is None:
        args = ["run", config, "-o", os.path.join(tmp, name)]
        for s in sets:
            args += ["--set", s]
        run_tpsim(opts, args, ok=(0, 1))
        opts.traces[name] = spec
    return name


def run_in(opts, args, tmp):
    """tpsim ARGS from tmp (exit 0 or 1)."""
    proc = subprocess.run([opts.tpsim] + args, cwd=tmp, capture_output=True,
                          text=True)
    if proc.returncode not in (0, 1):
        raise BadMarker("tpsim %s exited %d:\n%s" % (
            shown(args), proc.returncode, proc.stderr))
    return proc


def gen_diff(opts, args, tmp):
    if len(args) < 2:
        raise BadMarker("diff needs two runs")
    traces = [run_trace(opts, a, tmp) for a in args[:2]]
    cmd = ["diff"] + traces + args[2:]
    proc = run_in(opts, cmd, tmp)
    line = "$ tpsim %s" % shown(cmd)
    if args[2:] and "md" in args[2:] and "--format" in args[2:]:
        return fence("text", "%s\n[exit status %d]\n"
                     % (line, proc.returncode)) + "\n" + proc.stdout
    return fence("text", "%s\n%s[exit status %d]\n"
                 % (line, proc.stdout, proc.returncode))


def gen_plot(opts, args, tmp):
    if len(args) < 2:
        raise BadMarker("plot needs OUT.svg and a run")
    out, rest = args[0], args[1:]
    traces, labels, i = [], [], 0
    while i < len(rest):
        if rest[i] == "--label":
            if i + 1 == len(rest):
                raise BadMarker("plot: --label needs a text")
            labels += ["--label", rest[i + 1]]
            i += 2
        else:
            traces.append(run_trace(opts, rest[i], tmp))
            i += 1
    svg = os.path.join(tmp, "plot.svg")
    cmd = ["plot"] + traces + labels
    run_in(opts, cmd + ["-o", svg], tmp)
    with open(svg, "rb") as f:
        want = f.read()
    target = os.path.join(opts.root, out)
    try:
        with open(target, "rb") as f:
            have = f.read()
    except OSError:
        have = None
    if have != want:
        if opts.check:
            print("%s: the SVG is out of date (tpsim %s)"
                  % (out, shown(cmd + ["-o", out])))
            opts.svg_drift += 1
        else:
            with open(target + ".tmp", "wb") as f:
                f.write(want)
            os.replace(target + ".tmp", target)
            print("%s: rewritten" % out)
    image = os.path.relpath(target, os.path.dirname(opts.page))
    return (fence("text", "$ tpsim %s\n" % shown(cmd + ["-o", out]))
            + "\n![The loss per step of %s](%s)\n"
            % (", ".join(traces), image))


def generate(opts, words, inline, tmp):
    verb, args = words[0], words[1:]
    if verb == "explain":
        if not args:
            raise BadMarker("explain needs a config")
        trace = os.path.join(tmp, "t.json")
        run_tpsim(opts, ["run", args[0], "-o", trace], ok=(0, 1))
        out = run_tpsim(opts, ["explain", trace] + args[1:]).stdout
        fmt = args.index("--format") if "--format" in args else -1
        if fmt > 0 and args[fmt + 1:fmt + 2] == ["md"]:
            return "\n" + out.rstrip("\n") + "\n\n"
        return fence("text", out)
    if verb == "run":
        if not args:
            raise BadMarker("run needs a config")
        return gen_run(opts, args, tmp)
    if verb == "run-inline":
        if args:
            raise BadMarker("run-inline takes no arguments: the config is "
                            "the ```json fence after the marker")
        return gen_run(opts, ["-"], tmp, stdin=inline)
    if verb in ("mesh", "comm"):
        out = run_tpsim(opts, [verb] + args).stdout
        return fence("text", "$ tpsim %s\n%s" % (shown([verb] + args), out))
    if verb == "config":
        if len(args) != 1:
            raise BadMarker("config takes one path")
        path = os.path.join(opts.root, args[0])
        try:
            with open(path, encoding="utf-8") as f:
                return fence("json", f.read())
        except OSError as e:
            raise BadMarker("config %s: %s" % (args[0], e.strerror))
    if verb == "bounds-property":
        if args:
            raise BadMarker("bounds-property takes no arguments")
        if not opts.bounds_property:
            raise BadMarker("bounds-property needs --bounds-property "
                            "PATH (the test_bounds_property binary)")
        env = dict(os.environ, TPSIM_BOUNDS_MARKDOWN="1")
        env.pop("TPSIM_BOUNDS_CONFIGS", None)
        proc = subprocess.run([opts.bounds_property], cwd=opts.root,
                              env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BadMarker("%s exited %d:\n%s" % (
                opts.bounds_property, proc.returncode,
                proc.stderr + proc.stdout))
        return "\n" + proc.stdout.rstrip("\n") + "\n\n"
    if verb == "diff":
        return gen_diff(opts, args, tmp)
    if verb == "plot":
        return gen_plot(opts, args, tmp)
    raise BadMarker("unknown verb %r (expected one of %s)"
                    % (verb, ", ".join(VERBS)))


def blocks(lines):
    """Yield (marker line index, words, inline config, first generated
    line, end line) for each marker; raise BadMarker on a bad one."""
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            if lines[i].strip() == END:
                raise BadMarker("line %d: %s without a marker" % (i + 1, END))
            i += 1
            continue
        try:
            words = shlex.split(m.group(1))
        except ValueError as e:
            raise BadMarker("line %d: %s" % (i + 1, e))
        if not words or words[0] not in VERBS:
            raise BadMarker("line %d: unknown marker %r (expected one of %s)"
                            % (i + 1, m.group(1), ", ".join(VERBS)))
        start = i + 1
        inline = None
        if words[0] == "run-inline":
            j = start
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j >= len(lines) or lines[j].rstrip() != "```json":
                raise BadMarker("line %d: run-inline must be followed by a "
                                "```json fence" % (i + 1))
            k = j + 1
            while k < len(lines) and lines[k].rstrip() != "```":
                k += 1
            if k >= len(lines):
                raise BadMarker("line %d: unclosed ```json fence" % (j + 1))
            inline = "".join(lines[j + 1:k])
            start = k + 1
        end = start
        while end < len(lines) and lines[end].strip() != END:
            if MARKER.match(lines[end]):
                raise BadMarker("line %d: marker inside the block of line %d"
                                % (end + 1, i + 1))
            end += 1
        if end >= len(lines):
            raise BadMarker("line %d: no %s" % (i + 1, END))
        yield i, words, inline, start, end
        i = end + 1


def shown_path(opts, path):
    """A page's path relative to the root when it is inside it."""
    rel = os.path.relpath(path, opts.root)
    return path if rel.startswith("..") else rel


def sync_page(opts, path, tmp):
    """Return the number of drifted blocks (rewritten with --write)."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    rel = shown_path(opts, path)
    opts.page = path
    out, drifted, last = [], 0, 0
    for i, words, inline, start, end in blocks(lines):
        want = generate(opts, words, inline, tmp)
        have = "".join(lines[start:end])
        # The generated text sits between the marker (and its inline
        # config) and the end line, separated by one newline each side.
        want = want if want.startswith("\n") else "\n" + want
        want = want if want.endswith("\n\n") else want + "\n"
        out += lines[last:start]
        out.append(want)
        last = end
        if have != want:
            drifted += 1
            if opts.check:
                print("%s:%d: generated block is out of date: <!-- tpsim %s -->"
                      % (rel, i + 1, " ".join(words)))
                sys.stdout.writelines(difflib.unified_diff(
                    have.splitlines(True), want.splitlines(True),
                    "%s (in the page)" % rel, "%s (tpsim now)" % rel,
                    lineterm="\n"))
    out += lines[last:]
    if opts.write and drifted:
        new = path + ".tmp"
        with open(new, "w", encoding="utf-8") as f:
            f.write("".join(out))
        os.replace(new, path)
        print("%s: %d block(s) rewritten" % (rel, drifted))
    return drifted


def sync(opts):
    pages = [os.path.join(opts.root, p) for p in opts.pages] or sorted(
        glob.glob(os.path.join(opts.root, "docs", "tutorial", "*.md"))
        + [os.path.join(opts.root, p) for p in DEFAULT_PAGES])
    if not pages:
        print("docs_sync: no pages", file=sys.stderr)
        return 2
    drifted = 0
    opts.traces = {}
    opts.svg_drift = 0
    with tempfile.TemporaryDirectory() as tmp:
        for page in pages:
            try:
                drifted += sync_page(opts, page, tmp)
            except (BadMarker, OSError) as e:
                print("docs_sync: %s: %s" % (shown_path(opts, page), e),
                      file=sys.stderr)
                return 2
    drifted += opts.svg_drift
    if opts.check:
        print("%d page(s), %d drifted block(s) or SVG(s)%s" % (
            len(pages), drifted,
            "; run tools/docs_sync.py --write --tpsim PATH" if drifted else ""))
        return 1 if drifted else 0
    return 0


def self_test(opts):
    """--check must pass on a current page, fail (1) on an edited
    generated line or SVG, and refuse (2) a bad marker; with
    --bounds-property, also fail on an edited figure of docs/numerics.md's
    table."""
    me = os.path.abspath(__file__)
    page = os.path.join(opts.root, "docs", "tutorial", "01-colwise.md")
    failures = 0

    def check(path, *extra):
        return subprocess.run(
            [sys.executable, me, "--check", "--tpsim", opts.tpsim,
             "--root", opts.root] + list(extra) + [path],
            capture_output=True, text=True)

    with tempfile.TemporaryDirectory() as tmp:
        with open(page, encoding="utf-8") as f:
            text = f.read()
        cases = []
        cases.append(("a current page", text, 0, ""))
        # Edit one generated value, deep inside an explain block.
        row = "| 0 | (2, 1) | `[[30],[70]]` |"
        edited = text.replace(row, row.replace("70", "71"), 1)
        if edited == text:
            print("FAIL: 01-colwise.md lost the row the test edits: " + row)
            return 1
        cases.append(("an edited value", edited, 1, "+" + row))
        dropped = re.sub(r"(?m)^.*Placements.*\n", "", text, count=1)
        cases.append(("a dropped line", dropped, 1, "out of date"))
        cases.append(("an unclosed marker", text.replace(END, "", 1), 2,
                      "marker inside the block"))
        cases.append(("a stray end", text + END + "\n", 2, "without a marker"))
        cases.append(("an unknown verb", text.replace("<!-- tpsim explain",
                      "<!-- tpsim explian", 1), 2, "unknown marker"))
        cases.append(("bounds-property without its binary",
                      text + "<!-- tpsim bounds-property -->\n" + END + "\n",
                      2, "needs --bounds-property"))
        # The cases so far run without --bounds-property.
        cases = [c + ([],) for c in cases]
        if opts.bounds_property:
            # docs/numerics.md's table of the property test: an edited
            # figure is drift too.
            extra = ["--bounds-property", opts.bounds_property]
            with open(os.path.join(opts.root, "docs", "numerics.md"),
                      encoding="utf-8") as f:
                numerics = f.read()
            row = re.search(r"(?m)^\| all \| (\d+) \|", numerics)
            if not row:
                print("FAIL: docs/numerics.md lost its bounds-property "
                      "table's row 'all'")
                return 1
            edited = numerics.replace(
                row.group(0), "| all | %d |" % (int(row.group(1)) + 1), 1)
            cases.append(("the bounds table, current", numerics, 0, "",
                          extra))
            cases.append(("an edited figure of the bounds table", edited,
                          1, "+" + row.group(0), extra))
        # A generated SVG: written, current, then edited by hand.
        svg = os.path.join(tmp, "loss.svg")
        plot_page = os.path.join(tmp, "plot.md")
        with open(plot_page, "w", encoding="utf-8") as f:
            f.write("# plot\n\n<!-- tpsim plot %s "
                    "examples/convergence/mlp.json:tp=1:steps=3 -->\n%s\n"
                    % (svg, END))
        wrote = subprocess.run(
            [sys.executable, me, "--write", "--tpsim", opts.tpsim,
             "--root", opts.root, plot_page], capture_output=True, text=True)
        current = check(plot_page)
        with open(svg, "ab") as f:
            f.write(b"<!-- edited -->\n")
        edited_svg = check(plot_page)
        ok = (wrote.returncode == 0 and current.returncode == 0
              and edited_svg.returncode == 1
              and "the SVG is out of date" in edited_svg.stdout)
        print("%s: a generated SVG, current then edited (exit %d, %d; "
              "expected 0, 1)" % ("ok" if ok else "FAIL",
                                  current.returncode,
                                  edited_svg.returncode))
        if not ok:
            print(wrote.stdout + wrote.stderr + current.stdout
                  + edited_svg.stdout + edited_svg.stderr)
            failures += 1
        for name, content, want, says, extra in cases:
            path = os.path.join(tmp, "page.md")
            with open(path, "w", encoding="utf-8") as f:
                f.write(content)
            proc = check(path, *extra)
            said = proc.stdout + proc.stderr
            ok = proc.returncode == want and says in said
            print("%s: %s (exit %d, expected %d)" % (
                "ok" if ok else "FAIL", name, proc.returncode, want))
            if not ok:
                print(said)
                failures += 1
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true",
                      help="compare; exit 1 and show a diff on drift")
    mode.add_argument("--write", action="store_true",
                      help="rewrite the blocks that drifted")
    mode.add_argument("--self-test", action="store_true",
                      help="prove that --check fails on drift")
    ap.add_argument("--tpsim", required=True, help="the tpsim binary")
    ap.add_argument("--bounds-property", metavar="PATH",
                    help="the test_bounds_property binary, for the "
                         "bounds-property blocks (docs/numerics.md)")
    ap.add_argument("--root", default=os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))),
        help="the repository root (default: this script's ../)")
    ap.add_argument("pages", nargs="*",
                    help="pages to sync (default: docs/tutorial/*.md and "
                         "DEFAULT_PAGES)")
    opts = ap.parse_args()
    opts.root = os.path.abspath(opts.root)
    opts.tpsim = os.path.abspath(opts.tpsim)
    if opts.bounds_property:
        opts.bounds_property = os.path.abspath(opts.bounds_property)
    if not os.access(opts.tpsim, os.X_OK):
        print("docs_sync: %s: not an executable" % opts.tpsim, file=sys.stderr)
        return 2
    if opts.self_test:
        return self_test(opts)
    return sync(opts)


if __name__ == "__main__":
    sys.exit(main())
