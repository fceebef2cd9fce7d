#!/usr/bin/python3
"""Converts api/openapi.yaml to JSON and writes it as a C string constant.

usage: embed_openapi.py api/openapi.yaml build/gen/openapi_json.c
The daemon serves the result at GET /openapi.json, so the YAML document in the
repository is the one source of the contract.
"""
import json
import sys

import yaml


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    data = text.encode("utf-8")
    body = ",".join(str(b) for b in data)
    with open(dst, "w", encoding="ascii") as f:
        f.write("/* generated from %s by tools/embed_openapi.py; do not edit */\n" % src)
        f.write("#include <stddef.h>\n")
        f.write("const char api_openapi_json[] = {%s,0};\n" % body)
        f.write("const size_t api_openapi_json_len = %d;\n" % len(data))


if __name__ == "__main__":
    main()
