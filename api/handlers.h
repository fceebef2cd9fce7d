/*
 * handlers.h: one function per route, and what they share. Internal to api/;
 * service.c dispatches to them. Each leaves a complete reply (see service.h).
 */
#ifndef API_HANDLERS_H
#define API_HANDLERS_H

#include <stddef.h>
#include <time.h>

#include "registry.h"
#include "service.h"

void api_attention(const struct api_service *svc, const char *body, size_t len,
		   struct api_reply *reply);
void api_sdpa(const struct api_service *svc, const char *body, size_t len,
	      struct api_reply *reply);

/* Replaces the reply's body with the error body and sets its status. */
void api_reply_error(struct api_reply *reply, const struct api_error *err);

/* Milliseconds since t0 (CLOCK_MONOTONIC). */
double api_ms_since(const struct timespec *t0);

/* The OpenAPI document as JSON (generated from api/openapi.yaml at build time). */
extern const char api_openapi_json[];
extern const size_t api_openapi_json_len;

#endif
