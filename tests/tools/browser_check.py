#!/usr/bin/env python3
"""browser_check.py CHROMIUM TPUSIM RUN_SCENARIO SWEEP_SCENARIO (issue 21): opens a run's
report.html and a sweep's compare.html in headless Chromium (Debian's `chromium`, --no-sandbox
since CI runs as root) and fails on: any console message (the pages have no script, so any is an
error: a failed load, a parse error); a legend that does not list the 8 categories with a value
each; a step chart without exactly one bar per step; a link map without exactly one cell per link
of the run's profile; any http(s): resource; a chart region of the rendered PNG that is a single
colour. The PNG is decoded with the standard library (zlib), no other package."""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

CATEGORIES = ["mxu", "vector", "memory", "collective", "infeed", "input", "host", "idle"]


def fail(message):
    print("browser_check: " + message)
    sys.exit(1)


def chromium(binary, args, url, tmp):
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--enable-logging=stderr", "--v=0",
           "--user-data-dir=" + os.path.join(tmp, "profile")] + args + [url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    console = [l for l in p.stderr.splitlines() if "CONSOLE" in l]
    if console:
        fail("console messages from %s:\n%s" % (url, "\n".join(console)))
    if p.returncode != 0:
        fail("chromium exited %d on %s:\n%s" % (p.returncode, url, p.stderr[-2000:]))
    return p.stdout


def decode_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                fail("unexpected PNG format: depth %d colour %d interlace %d"
                     % (depth, colour, interlace))
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def check_charts(binary, tmp, name, dom, chart_ids):
    """Draws each chart's SVG alone at a known place and checks its pixels have several
    colours (the chart is drawn, not blank or a single block)."""
    page, y, regions = ["<!DOCTYPE html><html><body style=\"margin:0;background:#fff\">"], 0, []
    for chart in chart_ids:
        m = re.search(r'<svg[^>]*id="%s".*?</svg>' % chart, dom, re.S)
        if not m:
            fail("%s: no chart %s" % (name, chart))
        svg = m.group(0)
        w = int(float(re.search(r'width="([0-9.]+)"', svg).group(1)))
        h = int(float(re.search(r'height="([0-9.]+)"', svg).group(1)))
        page.append('<div style="position:absolute;left:0;top:%dpx">%s</div>' % (y, svg))
        regions.append((chart, y, min(w, 1200), h))
        y += h + 10
    page.append("</body></html>")
    html = os.path.join(tmp, name + "-charts.html")
    with open(html, "w", encoding="utf-8") as f:
        f.write("".join(page))
    png = os.path.join(tmp, name + ".png")
    chromium(binary, ["--hide-scrollbars", "--window-size=1200,%d" % max(200, y),
                      "--screenshot=" + png], "file://" + html, tmp)
    width, height, rows = decode_png(png)
    for chart, top, w, h in regions:
        colours = set()
        for row in rows[top:min(height, top + h):2]:
            colours.update(row[0:min(width, w):2])
        if len(colours) < 3:
            fail("%s: chart %s renders as %d colour(s)" % (name, chart, len(colours)))
    # The whole page too.
    full = os.path.join(tmp, name + "-page.png")
    return full


def no_network(name, text):
    for m in re.finditer(r'(?:src|href|xlink:href|action)\s*=\s*"([^"]*)"|url\(([^)]*)\)', text):
        value = (m.group(1) or m.group(2) or "").strip("'\" ").lower()
        if value.startswith("http:") or value.startswith("https:") or value.startswith("//"):
            fail("%s loads %s" % (name, value))


def main():
    binary, tpusim, run_scenario, sweep_scenario = sys.argv[1:5]
    tmp = tempfile.mkdtemp(prefix="browser_check.")
    try:
        out = os.path.join(tmp, "run")
        subprocess.run([tpusim, "run", run_scenario, "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
        report = os.path.join(out, "report.html")
        with open(report, encoding="utf-8") as f:
            source = f.read()
        no_network("report.html", source)
        dom = chromium(binary, ["--dump-dom"], "file://" + report, tmp)
        if "<h1>" not in dom:
            fail("report.html: the dumped DOM has no heading")
        # The legend: 8 categories, each with a value.
        legend = re.search(r'<p class="legend" id="legend">(.*?)</p>', dom, re.S)
        if not legend:
            fail("report.html: no legend")
        entries = re.findall(r'<span data-category="([a-z]+)">.*?<b class="value">([^<]*)</b>',
                             legend.group(1))
        if [c for c, _ in entries] != CATEGORIES:
            fail("report.html: legend lists %s, want %s" % ([c for c, _ in entries], CATEGORIES))
        for c, v in entries:
            if not re.match(r"[0-9]+\.[0-9]+ ms \([0-9]+\.[0-9]%\)$", v):
                fail("report.html: legend value of %s is %r" % (c, v))
        # One bar per step (the scenario runs one step per device call).
        with open(os.path.join(out, "stats.textproto"), encoding="utf-8") as f:
            profile = f.read()
        steps = len(re.findall(r"^steps \{", profile, re.M))
        bars = len(re.findall(r'<g class="step-bar" data-step="', dom))
        if steps == 0 or bars != steps:
            fail("report.html: %d step bars for %d steps" % (bars, steps))
        if dom.count('data-warm-up="true"') != 1:
            fail("report.html: the warm-up step is not marked once")
        links = len(re.findall(r"^links \{", profile, re.M))
        cells = len(re.findall(r'<rect class="link"', dom))
        if links == 0 or cells != links:
            fail("report.html: %d link-map cells for %d links" % (cells, links))
        check_charts(binary, tmp, "report", dom, ["steps", "devices", "linkmap", "linkscale"])
        # compare.html of a two-point sweep.
        sweep = os.path.join(tmp, "sweep")
        subprocess.run([tpusim, "sweep", sweep_scenario, "--jobs", "2",
                        "--set", "run.steps_per_run=1,2", "--out", sweep], check=True,
                       stdout=subprocess.DEVNULL)
        compare = os.path.join(sweep, "compare.html")
        with open(compare, encoding="utf-8") as f:
            no_network("compare.html", f.read())
        cdom = chromium(binary, ["--dump-dom"], "file://" + compare, tmp)
        centries = re.findall(r'<span data-category="([a-z]+)">', cdom)
        if centries != CATEGORIES:
            fail("compare.html: legend lists %s" % centries)
        runs = sorted(set(re.findall(r'class="seg" data-run="([0-9]+)"', cdom)))
        if runs != ["0", "1"]:
            fail("compare.html: breakdown bars for runs %s, want 0 and 1" % runs)
        check_charts(binary, tmp, "compare", cdom, ["breakdown", "per-chip", "hbm"])
        print("browser check ok: report.html (%d steps, %d links) and compare.html render"
              % (steps, links))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
