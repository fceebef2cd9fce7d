/*
 * light.h - shorter random sweeps where a full run would take minutes.
 *
 * Light mode is on when ATTN_TEST_LIGHT is set to anything but "0", or,
 * with it unset, under valgrind (which preloads its vgpreload_*.so).
 * ATTN_TEST_LIGHT=0 forces the full run. No state is kept.
 */
#ifndef ATTN_TESTS_LIGHT_H
#define ATTN_TESTS_LIGHT_H

#include <stdint.h>

/* 1 in light mode, else 0 */
int test_light(void);

/* 1 under valgrind (its vgpreload_*.so preloaded), else 0 */
int test_under_valgrind(void);

/* n, or n / 1000 (at least 1) in light mode */
uint64_t test_scaled(uint64_t n);

#endif
