/*
 * checkpoint_index.c: model.safetensors.index.json's shard names (see
 * checkpoint_config.h). {"metadata": {...}, "weight_map": {"name": "shard"}}:
 * only weight_map is read; a shard holds many tensors, so its name is kept
 * once, in the order it first appears.
 */
#include "checkpoint_config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_reader.h"

void api_checkpoint_shards_free(char **shards, size_t n)
{
	for (size_t i = 0; shards != NULL && i < n; i++)
		free(shards[i]);
	free(shards);
}

/* A file name beside the index: no path, no way up. */
static int shard_name_ok(json_t *v)
{
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);

	return len > 0 && strlen(s) == len && strcmp(s, ".") != 0 && strchr(s, '/') == NULL &&
	       strchr(s, '\\') == NULL && strstr(s, "..") == NULL;
}

/* The shards in the order each first appears, each once. The names seen
 * are kept in a jansson object, a hash table: a scan of the list per
 * tensor made an index of 80,000 shards 12 s of start-up, and the 64 MiB
 * an index may hold (2 million) hours. */
static int read_map(struct rd *r, json_t *map, char ***shards, size_t *n)
{
	const char *key;
	json_t *v, *seen = json_object();
	char q[QUOTE_MAX + 4];
	int rc = -1;

	/* at most one shard a tensor */
	*shards = rd_calloc(json_object_size(map), sizeof **shards);
	if (*shards == NULL || seen == NULL) {
		json_decref(seen);
		return rd_oom(r);
	}
	json_object_foreach(map, key, v)
	{
		if (!json_is_string(v)) {
			rd_fail_key(r, key, "expected a shard file name");
			goto out;
		}
		if (!shard_name_ok(v)) {
			rd_fail_key(r, key, "shard '%s' is not a file name beside the index",
				    rd_quote(q, json_string_value(v)));
			goto out;
		}
		if (json_object_get(seen, json_string_value(v)) != NULL)
			continue;
		if (json_object_set_new(seen, json_string_value(v), json_null()) != 0) {
			rd_oom(r);
			goto out;
		}
		if (rd_dup(r, json_string_value(v), json_string_length(v), &(*shards)[*n]) != 0)
			goto out;
		(*n)++;
	}
	rc = *n == 0 ? rd_fail(r, "no tensors") : 0;
out:
	json_decref(seen);
	return rc;
}

int api_checkpoint_index(char ***shards, size_t *n, const char *json, size_t len, const char *file,
			 char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root, *map;
	struct rd r;
	size_t up;
	int rc = -1;

	*shards = NULL;
	*n = 0;
	rd_init(&r, file, err, errlen);
	if (len > API_CHECKPOINT_INDEX_MAX)
		return rd_fail(&r, "%zu bytes, over the %u MiB limit", len,
			       API_CHECKPOINT_INDEX_MAX >> 20);
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		snprintf(err, errlen, "%s:%d:%d: %s", file, jerr.line, jerr.column, jerr.text);
		return -1;
	}
	map = json_object_get(root, "weight_map");
	if (!json_is_object(root)) {
		rd_fail(&r, "expected a JSON object");
	} else if (!json_is_object(map)) {
		rd_fail_key(&r, "weight_map", "%s",
			    map == NULL ? "missing (expected an object)" : "expected an object");
	} else {
		up = rd_key(&r, "weight_map");
		rc = read_map(&r, map, shards, n);
		rd_up(&r, up);
	}
	json_decref(root);
	if (rc != 0) {
		api_checkpoint_shards_free(*shards, *n);
		*shards = NULL;
		*n = 0;
	}
	return rc;
}
