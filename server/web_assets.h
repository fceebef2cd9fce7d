/*
 * web_assets.h: the viewer's files (web/), embedded in the daemon.
 *
 * tools/embed_web.py writes the table into build/gen/web_assets.c at build
 * time, as tools/embed_openapi.py does for the OpenAPI document. The table
 * and the bytes are static, read-only and live as long as the program:
 * callers borrow them and free nothing.
 */
#ifndef SERVER_WEB_ASSETS_H
#define SERVER_WEB_ASSETS_H

#include <stddef.h>

struct web_asset {
	const char *path;	  /* the file's name under web/: "app.js" */
	const char *content_type; /* "text/javascript; charset=utf-8" */
	const unsigned char *bytes;
	size_t len;
	const char *etag;	   /* "\"0123456789abcdef\"": its SHA-256, quoted */
	const unsigned char *gzip; /* the same file gzipped, or NULL (small, or no gain) */
	size_t gzip_len;
	const char *gzip_etag; /* the copy's: "\"<its SHA-256>-gzip\"", or NULL */
};

extern const struct web_asset web_assets[];
extern const size_t web_assets_count;

#endif
