/*
 * pow5_table.h: 128-bit normalised powers of five, 5^q for q in
 * [POW5_Q_MIN, POW5_Q_MAX], for common/decfloat.c (Eisel-Lemire).
 * POW5_128[q - POW5_Q_MIN] = {high 64 bits, low 64 bits}; tools/gen_pow5_table.py
 * writes pow5_table.c and says how each entry is rounded. Read-only data.
 */
#ifndef COMMON_POW5_TABLE_H
#define COMMON_POW5_TABLE_H

#include <stdint.h>

enum { POW5_Q_MIN = -342, POW5_Q_MAX = 308 };

extern const uint64_t POW5_128[POW5_Q_MAX - POW5_Q_MIN + 1][2];

#endif
