#!/usr/bin/python3
"""Writes the viewer's files (web/) as a C table the daemon serves.

usage: embed_web.py build/gen/web_assets.c web/index.html web/app.js ...
Each file becomes {name, content_type, bytes, len} in `web_assets[]`
(server/web_assets.h); attnd serves index.html at GET / and every file at
GET /web/{name}. The content type comes from the extension; a file of any
other kind, a name with characters outside [A-Za-z0-9._-], or a missing
index.html stops the build rather than ship a viewer that cannot load.
"""
import os
import re
import sys

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}
NAME = re.compile(r"^[A-Za-z0-9._-]+$")


def fail(msg):
    sys.stderr.write("embed_web.py: %s\n" % msg)
    sys.exit(1)


def asset(path):
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1].lower()
    if not NAME.match(name) or name.startswith("."):
        fail("%s: a served name must match [A-Za-z0-9._-]+" % path)
    if ext not in CONTENT_TYPES:
        fail("%s: no content type for '%s' (known: %s)" % (path, ext, " ".join(CONTENT_TYPES)))
    with open(path, "rb") as f:
        return name, CONTENT_TYPES[ext], f.read()


def c_bytes(data):
    lines = []
    for i in range(0, len(data), 24):
        lines.append("    " + ",".join(str(b) for b in data[i:i + 24]) + ",")
    return "\n".join(lines)


def main():
    if len(sys.argv) < 2:
        fail("usage: embed_web.py OUT.c FILE...")
    dst, srcs = sys.argv[1], sorted(sys.argv[2:], key=os.path.basename)
    assets = [asset(p) for p in srcs]
    names = [a[0] for a in assets]
    if "index.html" not in names:
        fail("no index.html among %s" % (names or "the inputs"))
    if len(set(names)) != len(names):
        fail("two files share a name: %s" % names)
    out = ["/* generated from web/ by tools/embed_web.py; do not edit */",
           "#include \"server/web_assets.h\"", ""]
    for i, (_, _, data) in enumerate(assets):
        out.append("static const unsigned char asset_%d[] = {\n%s\n    0};" % (i, c_bytes(data)))
    out.append("")
    out.append("const struct web_asset web_assets[] = {")
    for i, (name, ctype, data) in enumerate(assets):
        out.append("    {\"%s\", \"%s\", asset_%d, %d}," % (name, ctype, i, len(data)))
    out.append("};")
    out.append("const size_t web_assets_count = %d;" % len(assets))
    with open(dst, "w", encoding="ascii") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
