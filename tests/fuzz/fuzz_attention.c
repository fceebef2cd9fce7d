/* fuzz_attention.c: the input bytes as the body of POST /v1/attention. */
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
	fuzz_api_run(API_ROUTE_ATTENTION, NULL, data, size);
	return 0;
}
