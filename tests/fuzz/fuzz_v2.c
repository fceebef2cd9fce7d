/*
 * fuzz_v2.c: the input as a POST /v2/models/tiny/infer (api/v2.h).
 *
 * An input that starts with '@' names the model on its first line instead
 * ("@bert_f32\n...", up to 63 bytes: the checkpoints of fuzz.h's services).
 * Then an input that starts with '#' carries the
 * Inference-Header-Content-Length header (Triton's binary tensor extension)
 * on its first line: "#123\nBODY", the header's value verbatim (up to 31
 * bytes), then the body: the JSON header and its binary tensor data. Any
 * other input is the body, JSON alone.
 */
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_api_init();
	return 0;
}

/* A first line "<mark>VALUE\n": VALUE into out[cap] (NUL-terminated; a NUL
 * inside ends it early, as in a C string), data and size moved past it.
 * Returns whether the line was there. */
static int first_line(char mark, const uint8_t **data, size_t *size, char *out, size_t cap)
{
	size_t n = 0;

	if (*size == 0 || (*data)[0] != mark)
		return 0;
	while (1 + n < *size && (*data)[1 + n] != '\n' && n + 1 < cap)
		n++;
	memcpy(out, *data + 1, n);
	out[n] = '\0';
	*data += 1 + n;
	*size -= 1 + n;
	if (*size > 0 && (*data)[0] == '\n') {
		(*data)++;
		(*size)--;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct api_v2_call call = { "tiny", NULL, NULL, 0 };
	char model[64], header[32];

	if (first_line('@', &data, &size, model, sizeof model))
		call.model = model;
	if (first_line('#', &data, &size, header, sizeof header))
		call.header_len = header;
	fuzz_api_run(API_ROUTE_V2_INFER, &call, data, size);
	return 0;
}
