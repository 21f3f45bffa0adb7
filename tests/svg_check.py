#!/usr/bin/env python3
"""Every golden SVG (tests/golden/pictures, tests/golden/plot) and every SVG
under docs/img is well-formed XML whose root is an SVG 1.1 <svg> with a
<title>: what browsers, docs sites and screen readers need. Usage:
svg_check.py SOURCE_ROOT"""
import glob
import sys
import xml.dom.minidom

root = sys.argv[1]
files = sorted(glob.glob(root + "/tests/golden/pictures/*.svg") +
               glob.glob(root + "/tests/golden/plot/*.svg") +
               glob.glob(root + "/docs/img/*.svg"))
if not files:
    sys.exit("svg_check: no SVG files found under " + root)
for path in files:
    svg = xml.dom.minidom.parse(path).documentElement
    if svg.tagName != "svg" or svg.getAttribute("version") != "1.1":
        sys.exit(path + ": the root is not an SVG 1.1 <svg>")
    if not svg.getElementsByTagName("title"):
        sys.exit(path + ": no <title>")
    if svg.getElementsByTagName("script"):
        sys.exit(path + ": has a <script>")
print(len(files), "SVG files are well-formed")
