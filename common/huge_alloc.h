/*
 * huge_alloc.h: large buffers on 2 MiB pages, where the kernel gives them.
 *
 * A checkpoint's every-layer attentions are a buffer of many megabytes the
 * engine writes once a pass (gpt2 at L = 512: 151 MB, 37,000 pages of
 * 4 KiB). On 4 KiB pages the first stores to each page cost gpt2 150-250 ms
 * a pass on the bench's VM whenever other work had run in between (address
 * translation, not page faults: bench/README.md, Checkpoints, 2026-12-03);
 * on 2 MiB pages the pass costs what its writes cost.
 *
 * huge_alloc(bytes): at least HUGE_ALLOC_MIN bytes come aligned to 2 MiB
 * with madvise(MADV_HUGEPAGE) (honoured when transparent huge pages are
 * "always" or "madvise"; elsewhere they stay on 4 KiB pages); smaller ones
 * are a plain malloc. Either way the caller owns the buffer and releases it
 * with free(); NULL when out of memory. Nothing is kept here.
 */
#ifndef ATTN_HUGE_ALLOC_H
#define ATTN_HUGE_ALLOC_H

#include <stddef.h>

enum { HUGE_ALLOC_MIN = 4 << 20 };

void *huge_alloc(size_t bytes);

/* Whether huge_alloc's large buffers get 2 MiB pages, from the text of the
 * kernel's /sys/kernel/mm/transparent_hugepage/enabled (which the caller
 * reads: common/ does no I/O): 1 when it selects "[always]" or
 * "[madvise]"; 0 for "[never]" or a text it does not know. */
int huge_pages_mode(const char *text);

#endif
