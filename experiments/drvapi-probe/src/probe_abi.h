/* Constants shared by the C code and the assembly (thunks.S). Plain
 * #defines only: this header is also run through the C preprocessor for
 * the .S files. */
#ifndef PROBE_ABI_H
#define PROBE_ABI_H

/* Export-table thunk pool: PROBE_XT_TABLES tables x PROBE_XT_SLOTS slots.
 * Thunk number i (= table * PROBE_XT_SLOTS + slot) sits at
 * probe_xt_thunks + i * PROBE_THUNK_STRIDE. */
#define PROBE_XT_TABLES 32
#define PROBE_XT_SLOTS 128
#define PROBE_XT_NTHUNK (PROBE_XT_TABLES * PROBE_XT_SLOTS)
#define PROBE_THUNK_STRIDE 16

/* Counting thunks for PROBE_WRAP_PROCS=1 (one per distinct real target). */
#define PROBE_PW_NTHUNK 2048

/* Stack arguments copied from the caller's frame to the original slot
 * function (covers slots with up to 6 + 16 integer arguments). */
#define PROBE_XT_STACK_WORDS 16

/* Frame of probe_xt_common, offsets from %rsp after the prologue. */
#define XT_OFF_ARGS 0                      /* 16 words of outgoing stack args */
#define XT_OFF_GP 128                      /* rdi rsi rdx rcx r8 r9 */
#define XT_OFF_RAX 176
#define XT_OFF_IDX 184
#define XT_OFF_FN 192
#define XT_OFF_RDX 200
#define XT_OFF_XMM 208                     /* xmm0..xmm7, 16-byte aligned */
#define XT_OFF_REC 336                     /* struct xt_rec (C), see exptable.c */
#define XT_REC_SIZE 1776
#define XT_FRAME (XT_OFF_REC + XT_REC_SIZE) /* multiple of 16 */

/* Largest hex dump of a pointer argument (PROBE_DUMP bytes, default 64). */
#define PROBE_DUMP_MAX 256

#endif
