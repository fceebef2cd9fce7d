/*
 * http_inline.c: the answers made on the I/O thread, in the request's final
 * callback: the probes, /metrics, the viewer's files and the OpenAPI
 * document, the small API routes (GET /v1/models and the like) and the
 * preflights. Nothing here reads a body or waits: each answer is made from
 * state the server already holds.
 * Ownership as http_request.h says: r stays the lifecycle's (http.c).
 */
#include "http_request.h"

#include <microhttpd.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/openapi.h"
#include "common/buf.h"
#include "compress.h"
#include "web_assets.h"

static enum MHD_Result answer_healthz(struct request *r)
{
	return respond_text(r, 200, "{\"status\":\"ok\"}", "application/json");
}

static enum MHD_Result answer_readyz(struct request *r)
{
	if (atomic_load(&r->srv->draining))
		return respond_text(r, 503, "{\"status\":\"draining\"}", "application/json");
	if (api_service_model_count(r->srv->svc) == 0)
		return respond_text(r, 503, "{\"status\":\"no_models\"}", "application/json");
	return respond_text(r, 200, "{\"status\":\"ready\"}", "application/json");
}

/* The exposition, coded as Accept-Encoding asks (Prometheus asks for gzip:
 * some 44 KB of text become 4). */
static enum MHD_Result answer_metrics(struct request *r)
{
	struct buf b;
	enum MHD_Result ret = MHD_NO;

	buf_init(&b, METRICS_BODY_MAX);
	if (metrics_render(r->srv->metrics, &b) == 0) {
		r->content_encoding = compress_buf(&b, hdr_accept_encoding(&r->hdr, r->conn, CODINGS_ALL),
						   (int)r->srv->cfg->compress_level);
		ret = respond(r, 200, &b, METRICS_CONTENT_TYPE);
	}
	buf_release(&b);
	return ret;
}

static enum MHD_Result answer_api(struct request *r)
{
	call_api(r, NULL, 0);
	return answer_reply(r);
}

static const struct web_asset *web_asset_find(const char *name)
{
	for (size_t i = 0; i < web_assets_count; i++) {
		if (strcmp(web_assets[i].path, name) == 0)
			return &web_assets[i];
	}
	return NULL;
}

/* The representation of a to send: the gzip copy to a client that takes
 * gzip, else the file. Every answer on these paths varies on
 * Accept-Encoding (http.c: path_varies_on_encoding). */
static void pick_representation(struct request *r, const struct web_asset *a,
				const unsigned char **bytes, size_t *len)
{
	*bytes = a->bytes;
	*len = a->len;
	r->etag = a->etag;
	/* chosen among gzip and identity, the copies there are: a client that
	 * ranks deflate first still takes gzip over the file as it is */
	if (a->gzip == NULL ||
	    hdr_accept_encoding(&r->hdr, r->conn, CODINGS_GZIP) != CODING_GZIP)
		return;
	*bytes = a->gzip;
	*len = a->gzip_len;
	r->etag = a->gzip_etag;
	r->content_encoding = coding_name(CODING_GZIP);
}

/* A static file: the viewer's, or the OpenAPI document. They change only
 * with the binary, so browsers may keep them but must ask again (no-cache);
 * the entity tag makes asking cheap: a client that has this representation
 * (If-None-Match) gets 304 and no body, one that wants only another
 * (If-Match) 412. */
static enum MHD_Result answer_asset(struct request *r, const struct web_asset *a)
{
	const unsigned char *bytes;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t len;

	pick_representation(r, a, &bytes, &len);
	/* If-Match before If-None-Match (RFC 9110 section 13.2.2): a client
	 * that asked for one copy only (say, to know it is still current) gets
	 * 412 when this is not it; the error body is no copy: no ETag on it */
	if (hdr_if_match_fails(&r->hdr, r->conn, r->etag)) {
		r->etag = NULL;
		return refuse(r, REJ_PRECONDITION);
	}
	r->cache_control = "no-cache";
	/* PERSISTENT: libmicrohttpd only reads the static bytes, never writes or
	 * frees them; the cast through uintptr_t drops const for its signature */
	resp =
	    MHD_create_response_from_buffer(len, (void *)(uintptr_t)bytes, MHD_RESPMEM_PERSISTENT);
	if (resp == NULL)
		return MHD_NO;
	if (hdr_if_none_match(&r->hdr, r->conn, r->etag)) {
		/* libmicrohttpd sends a 304's head only, its Content-Length that
		 * of the 200 (RFC 9110 section 8.6): the body's type and coding
		 * stay with the copy the client has */
		r->content_encoding = NULL;
		ret = queue_response(r, 304, resp, 0, NULL);
	} else {
		ret = queue_response(r, 200, resp, len, a->content_type);
	}
	MHD_destroy_response(resp);
	return ret;
}

/* A file of the viewer; GET / is index.html, an unknown file 404. */
static enum MHD_Result answer_web(struct request *r)
{
	const char *name = r->route->param != NULL ? r->param : "index.html";
	const struct web_asset *a = web_asset_find(name);

	if (a == NULL) { /* the route matched: say what is missing */
		snprintf(r->detail, sizeof r->detail, "no viewer file '%.96s'", name);
		return refuse(r, REJ_NOT_FOUND);
	}
	return answer_asset(r, a);
}

/* GET /openapi.json: the document api/openapi.h holds, as a file. */
static enum MHD_Result answer_openapi(struct request *r)
{
	const struct web_asset doc = {
	    .path = "openapi.json",
	    .content_type = "application/json",
	    .bytes = (const unsigned char *)api_openapi_json,
	    .len = api_openapi_json_len,
	    .etag = api_openapi_json_etag,
	    .gzip = api_openapi_json_gzip,
	    .gzip_len = api_openapi_json_gzip_len,
	    .gzip_etag = api_openapi_json_gzip_etag,
	};

	return answer_asset(r, &doc);
}

enum MHD_Result answer_inline(struct request *r)
{
	if (r->preflight)
		return respond_text(r, 204, "", NULL);
	switch (r->route->kind) {
	case ROUTE_COMPUTE:
		return MHD_NO; /* never inline */
	case ROUTE_API:
		return answer_api(r);
	case ROUTE_HEALTHZ:
		return answer_healthz(r);
	case ROUTE_READYZ:
		return answer_readyz(r);
	case ROUTE_METRICS:
		return answer_metrics(r);
	case ROUTE_WEB:
		return answer_web(r);
	case ROUTE_OPENAPI:
		return answer_openapi(r);
	}
	return MHD_NO;
}
