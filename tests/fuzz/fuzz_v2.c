/*
 * fuzz_v2.c: the input as a POST /v2/models/tiny/infer (api/v2.h).
 *
 * An input that starts with '#' carries the Inference-Header-Content-Length
 * header (Triton's binary tensor extension) on its first line: "#123\nBODY",
 * the header's value verbatim (up to 31 bytes), then the body: the JSON
 * header and its binary tensor data. Any other input is the body, JSON alone.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct api_v2_call call = { "tiny", NULL, NULL, 0 };
	char header[32];
	size_t n = 0;

	if (size > 0 && data[0] == '#') {
		while (1 + n < size && data[1 + n] != '\n' && n + 1 < sizeof(header))
			n++;
		memcpy(header, data + 1, n);
		header[n] = '\0'; /* a NUL inside ends the value early, as in a C string */
		call.header_len = header;
		data += 1 + n;
		size -= 1 + n;
		if (size > 0 && data[0] == '\n') {
			data++;
			size--;
		}
	}
	fuzz_api_run(API_ROUTE_V2_INFER, &call, data, size);
	return 0;
}
