#!/usr/bin/python3
"""Converts api/openapi.yaml to JSON and writes it as C constants (api/openapi.h).

usage: embed_openapi.py api/openapi.yaml build/gen/openapi_json.c
The daemon serves the result at GET /openapi.json, so the YAML document in the
repository is the one source of the contract. Beside the JSON go its entity
tag and its gzip copy with the copy's own tag, made as tools/embed_web.py makes
the viewer's: the daemon serves the document as it serves those files.
"""
import json
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from embed_web import c_bytes, etag, gzipped  # noqa: E402  (one way to tag and code)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    data = text.encode("utf-8")
    coded = gzipped(data)
    if coded is None:
        sys.exit("embed_openapi.py: the document does not gzip smaller")
    with open(dst, "w", encoding="ascii") as f:
        f.write("/* generated from %s by tools/embed_openapi.py; do not edit */\n" % src)
        f.write("#include \"api/openapi.h\"\n")
        f.write("const char api_openapi_json[] = {\n%s\n    0};\n" % c_bytes(data))
        f.write("const size_t api_openapi_json_len = %d;\n" % len(data))
        f.write("const char api_openapi_json_etag[] = %s;\n" % etag(data))
        f.write("const unsigned char api_openapi_json_gzip[] = {\n%s\n    0};\n" % c_bytes(coded))
        f.write("const size_t api_openapi_json_gzip_len = %d;\n" % len(coded))
        f.write("const char api_openapi_json_gzip_etag[] = %s;\n" % etag(coded, "-gzip"))


if __name__ == "__main__":
    main()
