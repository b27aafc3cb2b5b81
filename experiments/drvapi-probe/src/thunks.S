/* Export-table logging thunks and counting thunks, x86-64 SysV.
 *
 * probe_xt_thunks: PROBE_XT_NTHUNK entries of exactly 16 bytes (fixed
 * encodings, checked below). Entry i puts i in
 * %r11 (not an argument register) and jumps to probe_xt_common, which
 *   - saves rdi rsi rdx rcx r8 r9, rax (al = vector-register count of a
 *     varargs call) and xmm0-7,
 *   - calls probe_xt_pre(i, saved gp registers, return address, record),
 *     which logs the call and returns the original slot function,
 *   - restores all of them, copies PROBE_XT_STACK_WORDS words of stack
 *     arguments from the caller's frame, and calls the original,
 *   - saves rax rdx xmm0 xmm1 (all return registers), calls
 *     probe_xt_post(record, rax), restores them and returns.
 *
 * probe_pw_thunks: PROBE_PW_NTHUNK entries of 16 bytes; entry i increments
 * probe_pw_count[i] and jumps to probe_pw_target[i]; no register but the
 * flags is touched.
 *
 * probe_pe_thunks (PROBE_WRAP_PROCS=2): the same PROBE_PW_NTHUNK targets
 * through a calling common part like probe_xt_common's (CALLING_COMMON),
 * whose probe_pe_pre counts the call and returns probe_pw_target[i] and
 * whose probe_pe_post logs a call that returned non-zero (a CUresult error)
 * with its caller. */
#include "probe_abi.h"

    .text

    /* The argument registers in the frame of CALLING_COMMON: rdi rsi rdx
     * rcx r8 r9 at XT_OFF_GP, xmm0-7 at XT_OFF_XMM; save=1 stores them
     * there, save=0 loads them back. */
    .macro ARG_REGS_GP save
    .set k, 0
    .irp r, rdi, rsi, rdx, rcx, r8, r9
    .if \save
    movq %\r, XT_OFF_GP+8*k(%rsp)
    .else
    movq XT_OFF_GP+8*k(%rsp), %\r
    .endif
    .set k, k + 1
    .endr
    .endm

    .macro ARG_REGS_XMM save
    .irp r, 0, 1, 2, 3, 4, 5, 6, 7
    .if \save
    movaps %xmm\r, XT_OFF_XMM+16*\r(%rsp)
    .else
    movaps XT_OFF_XMM+16*\r(%rsp), %xmm\r
    .endif
    .endr
    .endm

    .macro CALLING_COMMON name, pre, post
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    pushq %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    movq %rsp, %rbp
    .cfi_def_cfa_register %rbp
    subq $XT_FRAME, %rsp

    ARG_REGS_GP save=1
    movq %rax, XT_OFF_RAX(%rsp)
    movq %r11, XT_OFF_IDX(%rsp)
    ARG_REGS_XMM save=1

    movl %r11d, %edi
    leaq XT_OFF_GP(%rsp), %rsi
    movq 8(%rbp), %rdx
    leaq XT_OFF_REC(%rsp), %rcx
    call \pre
    movq %rax, XT_OFF_FN(%rsp)

    /* Stack arguments: the caller's start at 16(%rbp); the original must
     * find them at 8(%rsp) after our call pushes the return address. */
    .set k, 0
    .rept PROBE_XT_STACK_WORDS
    movq 16+8*k(%rbp), %r10
    movq %r10, XT_OFF_ARGS+8*k(%rsp)
    .set k, k + 1
    .endr

    ARG_REGS_XMM save=0
    ARG_REGS_GP save=0
    movq XT_OFF_RAX(%rsp), %rax
    movq XT_OFF_FN(%rsp), %r11
    call *%r11

    movq %rax, XT_OFF_RAX(%rsp)
    movq %rdx, XT_OFF_RDX(%rsp)
    movaps %xmm0, XT_OFF_XMM+0(%rsp)
    movaps %xmm1, XT_OFF_XMM+16(%rsp)
    leaq XT_OFF_REC(%rsp), %rdi
    movq %rax, %rsi
    call \post
    movq XT_OFF_RAX(%rsp), %rax
    movq XT_OFF_RDX(%rsp), %rdx
    movaps XT_OFF_XMM+0(%rsp), %xmm0
    movaps XT_OFF_XMM+16(%rsp), %xmm1

    movq %rbp, %rsp
    popq %rbp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size \name, . - \name
    .endm

    /* COUNT entries of PROBE_THUNK_STRIDE bytes at NAME (checked): entry i
     * puts i in %r11 and jumps to COMMON, a CALLING_COMMON */
    .macro INDEX_THUNKS name, count, common
    .globl \name
    .hidden \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    .set i, 0
    .rept \count
    movl $i, %r11d                  /* 6 bytes */
    .byte 0xe9                      /* jmp rel32, 5 bytes (no relaxation) */
    .long \common - . - 4
    .byte 0xcc, 0xcc, 0xcc, 0xcc, 0xcc
    .set i, i + 1
    .endr
    .cfi_endproc
\name\()_end:
    .size \name, \name\()_end - \name
    .if (\name\()_end - \name) - \count * PROBE_THUNK_STRIDE
    .error "a thunk of \name is longer than PROBE_THUNK_STRIDE"
    .endif
    .endm

    INDEX_THUNKS probe_xt_thunks, PROBE_XT_NTHUNK, probe_xt_common

    CALLING_COMMON probe_xt_common, probe_xt_pre, probe_xt_post

    INDEX_THUNKS probe_pe_thunks, PROBE_PW_NTHUNK, probe_pe_common

    CALLING_COMMON probe_pe_common, probe_pe_pre, probe_pe_post

    .globl probe_pw_thunks
    .hidden probe_pw_thunks
    .type probe_pw_thunks, @function
    .p2align 4
probe_pw_thunks:
    .cfi_startproc
    .set i, 0
    .rept PROBE_PW_NTHUNK
    lock incq probe_pw_count+8*i(%rip)  /* 8 bytes */
    jmp *probe_pw_target+8*i(%rip)      /* 6 bytes */
    .byte 0xcc, 0xcc
    .set i, i + 1
    .endr
    .cfi_endproc
probe_pw_thunks_end:
    .size probe_pw_thunks, probe_pw_thunks_end - probe_pw_thunks
    .if (probe_pw_thunks_end - probe_pw_thunks) - PROBE_PW_NTHUNK * PROBE_THUNK_STRIDE
    .error "a counting thunk is longer than PROBE_THUNK_STRIDE"
    .endif

    .bss
    .p2align 6
    .globl probe_pw_count
    .hidden probe_pw_count
    .type probe_pw_count, @object
probe_pw_count:
    .zero 8 * PROBE_PW_NTHUNK
    .size probe_pw_count, 8 * PROBE_PW_NTHUNK

    .globl probe_pw_target
    .hidden probe_pw_target
    .type probe_pw_target, @object
probe_pw_target:
    .zero 8 * PROBE_PW_NTHUNK
    .size probe_pw_target, 8 * PROBE_PW_NTHUNK

    .section .note.GNU-stack, "", @progbits
