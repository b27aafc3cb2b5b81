// SPDX-License-Identifier: GPL-2.0
/* mearas: PCI binding of the ivshmem device: BARs, MSI-X, removal. */
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "mearas.h"

#define MEARAS_PCI_VENDOR 0x1af4
#define MEARAS_PCI_DEVICE 0x1110

static bool relocate_high = true;
module_param(relocate_high, bool, 0444);
MODULE_PARM_DESC(relocate_high,
		 "Move a 64-bit BAR2 that firmware put below 4 GiB above it (default on)");

/*
 * Firmware such as SeaBIOS puts BAR2 into the 32-bit PCI hole, which its
 * MTRRs mark uncachable; x86 PAT then turns a write-back mapping request into
 * UC-. Above 4 GiB the MTRR default (write-back) applies, so ask the PCI core
 * to reassign the BAR there, where it prefers 64-bit resources. On failure
 * the BAR goes back to any free place and the driver continues as is.
 */
static void mearas_relocate_bar2(struct pci_dev *pdev)
{
	struct resource *res = &pdev->resource[2];
	resource_size_t old = res->start;
	u16 cmd;

	if (!relocate_high || !(res->flags & IORESOURCE_MEM_64) ||
	    res->start >= SZ_4G || !res->parent)
		return;

	pci_read_config_word(pdev, PCI_COMMAND, &cmd);
	pci_write_config_word(pdev, PCI_COMMAND, cmd & ~PCI_COMMAND_MEMORY);
	pci_release_resource(pdev, 2);
	if (pci_assign_resource(pdev, 2))
		dev_warn(&pdev->dev, "BAR2 could not be reassigned\n");
	pci_write_config_word(pdev, PCI_COMMAND, cmd);
	if (res->start != old)
		dev_info(&pdev->dev, "BAR2 moved from %pa to %pa\n", &old,
			 &res->start);
}

static irqreturn_t mearas_irq(int irq, void *data)
{
	struct mearas_vector *vec = data;
	struct mearas_dev *mdev = vec->mdev;

	atomic64_inc(&mdev->irq_count[vec->index]);
	wake_up_interruptible_all(&mdev->wq);
	return IRQ_HANDLED;
}

u32 mearas_read_peer_id(struct mearas_dev *mdev)
{
	return ioread32(mdev->regs + MEARAS_REG_IVPOSITION);
}

static void mearas_free_irqs(struct mearas_dev *mdev, unsigned int count)
{
	unsigned int i;

	for (i = 0; i < count; i++)
		free_irq(pci_irq_vector(mdev->pdev, i), &mdev->vectors[i]);
	if (mdev->nr_vectors)
		pci_free_irq_vectors(mdev->pdev);
}

static int mearas_setup_irqs(struct mearas_dev *mdev)
{
	struct pci_dev *pdev = mdev->pdev;
	int avail = pci_msix_vec_count(pdev);
	unsigned int i;
	int nvec, err;

	if (avail <= 0)
		return 0; /* ivshmem-plain: shared memory only */

	mdev->doorbell = true;
	pci_set_master(pdev);
	nvec = pci_alloc_irq_vectors(pdev, 1, min(avail, MEARAS_MAX_VECTORS),
				     PCI_IRQ_MSIX);
	if (nvec < 0)
		return nvec;
	mdev->nr_vectors = nvec;

	for (i = 0; i < mdev->nr_vectors; i++) {
		mdev->vectors[i].mdev = mdev;
		mdev->vectors[i].index = i;
		err = request_irq(pci_irq_vector(pdev, i), mearas_irq, 0,
				  MEARAS_NAME, &mdev->vectors[i]);
		if (err) {
			mearas_free_irqs(mdev, i);
			mdev->nr_vectors = 0;
			return err;
		}
	}
	return 0;
}

static int mearas_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct mearas_dev *mdev;
	int err;

	mdev = kzalloc(sizeof(*mdev), GFP_KERNEL);
	if (!mdev)
		return -ENOMEM;
	kref_init(&mdev->ref);
	init_rwsem(&mdev->lock);
	init_waitqueue_head(&mdev->wq);
	mutex_init(&mdev->files_lock);
	INIT_LIST_HEAD(&mdev->files);
	mdev->pdev = pdev;

	mearas_relocate_bar2(pdev);
	err = pci_enable_device(pdev);
	if (err)
		goto err_free;
	err = pci_request_regions(pdev, MEARAS_NAME);
	if (err)
		goto err_disable;

	mdev->regs = pci_iomap(pdev, 0, 0);
	mdev->shm_phys = pci_resource_start(pdev, 2);
	mdev->shm_size = pci_resource_len(pdev, 2);
	if (!mdev->regs || !mdev->shm_size ||
	    !(pci_resource_flags(pdev, 2) & IORESOURCE_MEM)) {
		dev_err(&pdev->dev, "BAR0 or BAR2 missing\n");
		err = -ENODEV;
		goto err_iounmap;
	}
	/* BAR2 is host RAM: reserve it write-back so user mappings are WB. */
	mdev->shm = memremap(mdev->shm_phys, mdev->shm_size, MEMREMAP_WB);
	if (!mdev->shm) {
		err = -ENOMEM;
		goto err_iounmap;
	}

	err = mearas_setup_irqs(mdev);
	if (err)
		goto err_memunmap;

	err = mearas_node_add(mdev, &pdev->dev);
	if (err)
		goto err_irqs;

	pci_set_drvdata(pdev, mdev);
	dev_info(&pdev->dev,
		 "mearas%d: shm %llu bytes, peer %u, %u vectors%s\n",
		 mdev->minor, mdev->shm_size, mearas_read_peer_id(mdev),
		 mdev->nr_vectors, mdev->doorbell ? ", doorbell" : "");
	return 0;

err_irqs:
	mearas_free_irqs(mdev, mdev->nr_vectors);
err_memunmap:
	memunmap(mdev->shm);
err_iounmap:
	if (mdev->regs)
		pci_iounmap(pdev, mdev->regs);
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
err_free:
	kfree(mdev);
	return err;
}

static void mearas_remove(struct pci_dev *pdev)
{
	struct mearas_dev *mdev = pci_get_drvdata(pdev);
	struct mearas_file *mf;

	mearas_node_remove(mdev);

	down_write(&mdev->lock);
	mdev->dead = true;
	up_write(&mdev->lock);

	/* Faults now see dead and raise SIGBUS; drop what is already mapped. */
	mutex_lock(&mdev->files_lock);
	list_for_each_entry(mf, &mdev->files, node)
		unmap_mapping_range(mf->file->f_mapping, 0, 0, 1);
	mutex_unlock(&mdev->files_lock);

	mearas_free_irqs(mdev, mdev->nr_vectors);
	wake_up_interruptible_all(&mdev->wq);

	memunmap(mdev->shm);
	pci_iounmap(pdev, mdev->regs);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	pci_set_drvdata(pdev, NULL);
	dev_info(&pdev->dev, "mearas%d removed\n", mdev->minor);
	mearas_dev_put(mdev);
}

static const struct pci_device_id mearas_pci_ids[] = {
	{ PCI_DEVICE(MEARAS_PCI_VENDOR, MEARAS_PCI_DEVICE) },
	{ 0 }
};
MODULE_DEVICE_TABLE(pci, mearas_pci_ids);

static struct pci_driver mearas_pci_driver = {
	.name = MEARAS_NAME,
	.id_table = mearas_pci_ids,
	.probe = mearas_probe,
	.remove = mearas_remove,
};

int mearas_pci_register(void)
{
	return pci_register_driver(&mearas_pci_driver);
}

void mearas_pci_unregister(void)
{
	pci_unregister_driver(&mearas_pci_driver);
}
