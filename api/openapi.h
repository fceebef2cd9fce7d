/*
 * openapi.h: the OpenAPI document (api/openapi.yaml) as JSON, and its gzip
 * copy, which tools/embed_openapi.py writes into build/gen/openapi_json.c
 * at build time. All of it is static, read-only and lives as long as the
 * program: callers borrow it and free nothing.
 */
#ifndef API_OPENAPI_H
#define API_OPENAPI_H

#include <stddef.h>

extern const char api_openapi_json[]; /* NUL-terminated, api_openapi_json_len bytes before */
extern const size_t api_openapi_json_len;
extern const char api_openapi_json_etag[]; /* "\"<16 hex of its SHA-256>\"" */

/* The same bytes gzipped (level 9, no name, no time), with their own tag
 * (a strong tag names one representation: RFC 9110 section 8.8.3). */
extern const unsigned char api_openapi_json_gzip[];
extern const size_t api_openapi_json_gzip_len;
extern const char api_openapi_json_gzip_etag[]; /* "\"<16 hex>-gzip\"" */

#endif
