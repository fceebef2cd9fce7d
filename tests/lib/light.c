/* light.c - see light.h */
#include "light.h"

#include <stdlib.h>
#include <string.h>

int test_under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload != NULL && strstr(preload, "vgpreload") != NULL;
}

int test_light(void)
{
	const char *v = getenv("ATTN_TEST_LIGHT");

	if (v != NULL && v[0] != '\0')
		return strcmp(v, "0") != 0;
	return test_under_valgrind();
}

uint64_t test_scaled(uint64_t n)
{
	if (!test_light())
		return n;
	return n / 1000 > 0 ? n / 1000 : 1;
}
