#!/usr/bin/python3
"""Writes the viewer's files (web/) as a C table the daemon serves.

usage: embed_web.py build/gen/web_assets.c web/index.html web/app.js ...
Each file becomes {name, content_type, bytes, len, etag, gzip, gzip_len,
gzip_etag} in `web_assets[]` (server/web_assets.h); attnd serves index.html
at GET / and every file at GET /web/{name}. The entity tag is the first 16
hex digits of the file's SHA-256, quoted; the gzip copy (level 9, no name,
no time: the same bytes for the same zlib) is kept when the file has at
least MIN_GZIP bytes and the copy is smaller, with its own tag, from the
copy's own bytes (a strong tag names one representation, byte for byte:
RFC 9110 section 8.8.3; another zlib may code the file differently).
The content type comes from the extension; a file of any other kind, a
name with characters outside [A-Za-z0-9._-], or a missing index.html
stops the build rather than ship a viewer that cannot load.
"""
import gzip
import hashlib
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
MIN_GZIP = 1024  # server/compress.h: COMPRESS_MIN_BYTES, for the same reason


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


def etag(data, suffix=""):
    """The entity tag of data as a C string literal: "\"<16 hex>SUFFIX\""."""
    return '"\\"%s%s\\""' % (hashlib.sha256(data).hexdigest()[:16], suffix)


def gzipped(data):
    """The gzip copy worth sending instead of data, or None."""
    if len(data) < MIN_GZIP:
        return None
    coded = gzip.compress(data, compresslevel=9, mtime=0)
    return coded if len(coded) < len(data) else None


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
    rows = []
    for i, (name, ctype, data) in enumerate(assets):
        out.append("static const unsigned char asset_%d[] = {\n%s\n    0};" % (i, c_bytes(data)))
        coded = gzipped(data)
        if coded is None:
            gz = "NULL, 0, NULL"
        else:
            out.append("static const unsigned char asset_%d_gz[] = {\n%s\n    0};"
                       % (i, c_bytes(coded)))
            gz = "asset_%d_gz, %d, %s" % (i, len(coded), etag(coded, "-gzip"))
        rows.append('    {"%s", "%s", asset_%d, %d, %s, %s},'
                    % (name, ctype, i, len(data), etag(data), gz))
    out.append("")
    out.append("const struct web_asset web_assets[] = {")
    out.extend(rows)
    out.append("};")
    out.append("const size_t web_assets_count = %d;" % len(assets))
    with open(dst, "w", encoding="ascii") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
