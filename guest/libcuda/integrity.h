/* SPDX-License-Identifier: MIT */
/*
 * The answer of the runtime's integrity check (export table d4082055...,
 * slot 1): HMAC-MD2 (RFC 1319, RFC 2104) under a fixed key over what the
 * calling process sees of the driver: the driver version, the version asked
 * for, pid, thread, the two tables' and the slot's addresses, the time given
 * and every device's UUID and PCI ids as this front end reports them.
 * NVIDIA's runtime recomputes it and latches error 103 on a mismatch, so it
 * is computed here, in the calling thread, never by the host.
 * docs/driver-api.md has the message layout and where each input comes from.
 */
#ifndef MEARAS_CU_INTEGRITY_H
#define MEARAS_CU_INTEGRITY_H

#include <stddef.h>
#include <stdint.h>

struct cu_integrity_device {
	uint8_t uuid[16];
	int32_t pci_domain, pci_bus, pci_device;
};

struct cu_integrity_input {
	uint32_t driver_version;        /* what cuDriverGetVersion reports */
	uint32_t version;               /* slot 1's first argument */
	uint32_t pid;                   /* getpid() */
	uint32_t thread;                /* low 32 bits of pthread_self() */
	uint64_t cudart_table;          /* the CUDART_INTERFACE table handed out */
	uint64_t integrity_table;       /* this table, as handed out */
	uint64_t slot_fn;               /* the value in slot 1 of this table */
	uint64_t unix_seconds;          /* slot 1's second argument */
	unsigned ndevices;
	const struct cu_integrity_device *devices;
};

/* The 16 bytes slot 1 writes for in. */
void cu_integrity_answer(const struct cu_integrity_input *in, uint8_t out[16]);

/* MD2 of len bytes (exposed for the unit test's RFC 1319 vectors). */
void cu_md2(const void *data, size_t len, uint8_t out[16]);

#endif
