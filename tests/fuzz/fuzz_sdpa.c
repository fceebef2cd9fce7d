/* fuzz_sdpa.c: the input bytes as the body of POST /v1/sdpa. */
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
	fuzz_api_run(API_ROUTE_SDPA, NULL, data, size);
	return 0;
}
