/* SPDX-License-Identifier: MIT */
/*
 * Input of fuzz_remote_records (also written by seeds_remote.c): what the
 * forwarding node sends to a remote node's session.
 *   u8  flags   REMF_*
 *   then items until the end:
 *     REMI_MSG    u8 op, u8 wants_reply, u16 len, len bytes: one link message
 *                 (RECORD, MAPPED, REAP, OPEN or anything else)
 *     REMI_CHUNK  u8 op, u64 tag, u64 offset, u16 len, len bytes: a bulk chunk
 *     REMI_GONE   u8 op: the worker process exits (what it still had in
 *                 flight is failed by the session; later records are refused)
 *   all little-endian. In a RECORD message (at least a remote_record_hdr),
 *   the harness sets sqe.user_data and done_id to the record's number (so
 *   that completions can be matched) and resolves tagged arguments as
 *   fuzz_input.h says (FUZZ_TAG_A and _B: allocations of the worker's vGPU).
 */
#ifndef MEARAS_FUZZ_REMOTE_H
#define MEARAS_FUZZ_REMOTE_H

#include "fuzz_input.h"

#define REMF_GRAPHS   1u  /* the device captures: captures and graph launches are followed */
#define REMF_BUDGET   2u  /* a 1 MiB memory budget for the link (else the default) */
#define REMF_NO_START 4u  /* the worker never comes up: records are refused */

#define REMI_MSG   0u
#define REMI_CHUNK 1u
#define REMI_GONE  2u

#define REMOTE_FUZZ_QUOTA (64ull << 20)

/* FUZZ_WRITE_SEEDS=DIR build/fuzz_remote_records: 0 or -1 */
int seeds_remote(const char *dir);

#endif
