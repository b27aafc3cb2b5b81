/* SPDX-License-Identifier: GPL-2.0 */
/* mearas: guest driver for QEMU's ivshmem PCI device (shared state). */
#ifndef MEARAS_H
#define MEARAS_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/rwsem.h>
#include <linux/wait.h>

#include <mearas/kmod_uapi.h>

#define MEARAS_NAME "mearas"
#define MEARAS_MAX_DEVICES 64

/* BAR0 registers (QEMU docs/specs/ivshmem-spec.rst). */
#define MEARAS_REG_IVPOSITION 8
#define MEARAS_REG_DOORBELL 12

struct mearas_dev;

struct mearas_vector {
	struct mearas_dev *mdev;
	unsigned int index;
};

/*
 * One per PCI device. Refcounted: the PCI binding holds one reference and
 * every open file one more, so the state outlives device removal and module
 * unload never frees what a file still points to.
 */
struct mearas_dev {
	struct kref ref;
	/* Held for reading by users of the hardware, for writing by removal. */
	struct rw_semaphore lock;
	bool dead;			/* set under lock (write), then never cleared */
	struct pci_dev *pdev;		/* valid while !dead */
	void __iomem *regs;		/* BAR0, valid while !dead */
	void *shm;			/* BAR2 memremap()ed WB, valid while !dead */
	phys_addr_t shm_phys;
	u64 shm_size;
	unsigned int nr_vectors;
	bool doorbell;
	int minor;
	struct device *node;

	wait_queue_head_t wq;		/* woken on every interrupt and on removal */
	atomic64_t irq_count[MEARAS_MAX_VECTORS];
	struct mearas_vector vectors[MEARAS_MAX_VECTORS];

	struct mutex files_lock;
	struct list_head files;		/* open mearas_file, for zapping mappings */
};

struct mearas_file {
	struct mearas_dev *mdev;
	struct file *file;
	struct list_head node;		/* in mdev->files */
	struct mutex read_lock;
	u64 seen[MEARAS_MAX_VECTORS];	/* counters as of this fd's last read() */
	struct mutex claims_lock;
	unsigned int nr_claims;
	struct mearas_claim claims[MEARAS_MAX_CLAIMS];	/* undone at release() */
	/*
	 * mearas VM protocol: the slot this file claimed (-1 none; published
	 * with release semantics after the offsets below) and what it may map.
	 */
	int vm_slot;
	struct pid *vm_owner;		/* the claiming process (thread group) */
	u32 vm_token;			/* mappable once the slot's ready word says it */
	u32 vm_nvgpus;
	u64 vm_region_off, vm_region_size, vm_out_off;
};

/* mearas_main.c */
extern const struct file_operations mearas_fops;
struct mearas_dev *mearas_dev_get_by_minor(int minor);
void mearas_dev_put(struct mearas_dev *mdev);
int mearas_node_add(struct mearas_dev *mdev, struct device *parent);
void mearas_node_remove(struct mearas_dev *mdev);

/* mearas_pci.c */
int mearas_pci_register(void);
void mearas_pci_unregister(void);
u32 mearas_read_peer_id(struct mearas_dev *mdev);

#endif /* MEARAS_H */
