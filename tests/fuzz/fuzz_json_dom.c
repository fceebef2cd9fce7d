/* fuzz_json_dom.c: the input bytes as a JSON text, read by json_dom_parse
 * and by its twin, jansson's json_loadb with JSON_REJECT_DUPLICATES
 * (api/json/json_dom.h). Aborts when json_dom_parse takes a text jansson
 * rejects, or reads it into values whose compact dump differs from
 * jansson's (types, values, key order). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/json_dom.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static char *dump(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));

	if (s == NULL)
		abort();
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t jerr;
	json_t *dom = json_dom_parse((const char *)data, size), *ref;
	char *a, *b;

	if (dom == NULL)
		return 0;
	ref = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
	if (ref == NULL)
		abort(); /* taken here, rejected by jansson */
	a = dump(dom), b = dump(ref);
	if (strcmp(a, b) != 0)
		abort();
	free(a), free(b);
	json_decref(dom);
	json_decref(ref);
	return 0;
}
