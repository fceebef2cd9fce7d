/*
 * cancel.h: a caller's flag that stops an engine call early.
 *
 * struct attn_sdpa, struct attn_mha and struct attn_stack_run take an
 * optional `const atomic_int *cancel` (NULL: never cancelled). Another thread
 * (a server's watcher of its clients and deadlines) may set it to nonzero at
 * any time; it must never clear it during a call. The engine reads it between
 * bounded pieces of work: each (query block, head) of attention.c, each
 * (task, key block) of mha_stream.c, each tile of a projection (linear.h:
 * LINEAR_BLOCK rows, or the stack's LINEAR_TALL rows by half the columns),
 * each layer of stack.c, so no stretch between two reads is long (a
 * projection tile is the longest: one sgemm, which cannot be cut without
 * changing its rounding).
 *
 * A thread of a team (team.h) that sees the flag skips the rest of its work
 * but still meets every barrier; the call then returns ATTN_ERR_CANCELLED
 * and its outputs are unspecified. The flag is read, never clocked: the
 * engine keeps no time. A call whose flag is never set computes exactly what
 * it computes without one (the reads change no arithmetic). The naive twins
 * (*_ref.c) do not read it.
 *
 * Ownership: the flag is the caller's and must outlive the call.
 */
#ifndef ATTN_CANCEL_H
#define ATTN_CANCEL_H

#include <stdatomic.h>
#include <stddef.h>

#include "status.h"

/* 1 when flag is set. Relaxed: the flag orders nothing, and a thread that saw
 * it set hands that on through the team's join, which the caller's final
 * read comes after. */
static inline int attn_cancelled(const atomic_int *flag)
{
	return flag != NULL && atomic_load_explicit(flag, memory_order_relaxed) != 0;
}

/* ATTN_ERR_CANCELLED recorded in err when flag is set, else ATTN_OK. Callers
 * ask it before they judge their outputs (a cancelled call's outputs are
 * garbage, not a result overflow). */
static inline enum attn_status attn_cancel_check(const atomic_int *flag, struct attn_error *err)
{
	if (!attn_cancelled(flag))
		return ATTN_OK;
	return attn_fail(err, ATTN_ERR_CANCELLED, "cancel", 0,
			 "the call was cancelled by its caller before it finished");
}

#endif
