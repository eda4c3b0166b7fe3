#!/usr/bin/env python3
"""docs_blocks.py [--update] TPUSIM ROOT PAGE...: the command outputs shown in the docs.

A page marks each block it shows with the command that produces it:

    <!-- tpusim-output: run scenarios/run/resnet50_v4_32.textproto -->
    ```
    $ tpusim run scenarios/run/resnet50_v4_32.textproto
    ...what the command prints...
    ```
    <!-- end tpusim-output -->

The words after "tpusim-output" and before the colon are options: `exit=N` (the exit
code the command must give; default 0), `stderr` (show stderr after stdout; the wall
time and memory line `run` prints there is left out), `only-stderr` (show stderr alone),
`head=N` (the first N lines, then a line "…"), `tail=N` (a line "…", then the last N). The command runs from ROOT with TPUSIM as `tpusim`; its arguments are
split as a shell would (no pipes or variables). Without --update the script passes when
every block equals the command's output and prints a diff otherwise; with --update it
rewrites the blocks (tools/update_docs.sh). Everything outside the markers is left alone.
"""
import difflib
import re
import shlex
import subprocess
import sys

BEGIN = re.compile(r"^<!-- tpusim-output(?P<opts>[^:]*): (?P<cmd>.*) -->$")
END = "<!-- end tpusim-output -->"
WALL = re.compile(r"^tpusim run: [0-9.]+ s wall")


def render(tpusim, root, opts, cmd):
    want_exit, with_stderr, only_stderr, head, tail = 0, False, False, None, None
    for opt in opts.split():
        if opt.startswith("exit="):
            want_exit = int(opt[5:])
        elif opt == "stderr":
            with_stderr = True
        elif opt == "only-stderr":
            only_stderr = True
        elif opt.startswith("head="):
            head = int(opt[5:])
        elif opt.startswith("tail="):
            tail = int(opt[5:])
        else:
            raise SystemExit("unknown option %r in block: %s" % (opt, cmd))
    run = subprocess.run([tpusim] + shlex.split(cmd), cwd=root, capture_output=True,
                         text=True)
    if run.returncode != want_exit:
        raise SystemExit("tpusim %s exited %d, the page says %d:\n%s" %
                         (cmd, run.returncode, want_exit, run.stderr))
    err = "".join(l for l in run.stderr.splitlines(True) if not WALL.match(l))
    text = err if only_stderr else run.stdout + (err if with_stderr else "")
    lines = text.splitlines()
    if head is not None and len(lines) > head:
        lines = lines[:head] + ["…"]
    if tail is not None and len(lines) > tail:
        lines = ["…"] + lines[-tail:]
    return ["```\n", "$ tpusim %s\n" % cmd] + [l + "\n" for l in lines] + ["```\n"]


def process(tpusim, root, page, update):
    with open(page, encoding="utf-8") as f:
        lines = f.readlines()
    out, i, blocks, stale = [], 0, 0, []
    while i < len(lines):
        m = BEGIN.match(lines[i].rstrip("\n"))
        out.append(lines[i])
        i += 1
        if not m:
            continue
        start = i
        while i < len(lines) and lines[i].rstrip("\n") != END:
            i += 1
        if i == len(lines):
            raise SystemExit("%s: a tpusim-output block is not closed: %s" %
                             (page, m.group("cmd")))
        blocks += 1
        want = render(tpusim, root, m.group("opts"), m.group("cmd"))
        if lines[start:i] != want:
            stale.append((m.group("cmd"), lines[start:i], want))
        out.extend(want)
    if update:
        with open(page, "w", encoding="utf-8") as f:
            f.writelines(out)
    return blocks, stale


def main():
    args = sys.argv[1:]
    update = args[:1] == ["--update"]
    if update:
        args = args[1:]
    if len(args) < 3:
        raise SystemExit(__doc__)
    tpusim, root, pages = args[0], args[1], args[2:]
    status = 0
    for page in pages:
        blocks, stale = process(tpusim, root, root + "/" + page, update)
        for cmd, have, want in stale:
            if update:
                print("%s: rewrote the output of tpusim %s" % (page, cmd))
            else:
                status = 1
                print("%s: the output of `tpusim %s` has changed:" % (page, cmd))
                sys.stdout.writelines(difflib.unified_diff(have, want, "page", "tool"))
        print("%s: %d block(s), %d %s" % (page, blocks, len(stale),
                                          "rewritten" if update else "stale"))
    if status:
        print("rerun tools/update_docs.sh to rewrite them (and review the diff)")
    return status


if __name__ == "__main__":
    sys.exit(main())
