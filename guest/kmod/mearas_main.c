// SPDX-License-Identifier: GPL-2.0
/*
 * mearas: guest driver for QEMU's ivshmem device. Module setup, the
 * /dev/mearasN character devices and the device registry.
 */
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/version.h>

#include "mearas.h"

static dev_t mearas_devt;
static struct cdev mearas_cdev;
static struct class *mearas_class;
static DEFINE_IDR(mearas_idr);
static DEFINE_MUTEX(mearas_idr_lock);

static void mearas_dev_release(struct kref *ref)
{
	kfree(container_of(ref, struct mearas_dev, ref));
}

void mearas_dev_put(struct mearas_dev *mdev)
{
	kref_put(&mdev->ref, mearas_dev_release);
}

struct mearas_dev *mearas_dev_get_by_minor(int minor)
{
	struct mearas_dev *mdev;

	mutex_lock(&mearas_idr_lock);
	mdev = idr_find(&mearas_idr, minor);
	if (mdev)
		kref_get(&mdev->ref);
	mutex_unlock(&mearas_idr_lock);
	return mdev;
}

int mearas_node_add(struct mearas_dev *mdev, struct device *parent)
{
	int minor;

	mutex_lock(&mearas_idr_lock);
	minor = idr_alloc(&mearas_idr, mdev, 0, MEARAS_MAX_DEVICES, GFP_KERNEL);
	mutex_unlock(&mearas_idr_lock);
	if (minor < 0)
		return minor == -ENOSPC ? -EBUSY : minor;
	mdev->minor = minor;

	mdev->node = device_create(mearas_class, parent,
				   MKDEV(MAJOR(mearas_devt), minor), mdev,
				   MEARAS_NAME "%d", minor);
	if (IS_ERR(mdev->node)) {
		int err = PTR_ERR(mdev->node);

		mutex_lock(&mearas_idr_lock);
		idr_remove(&mearas_idr, minor);
		mutex_unlock(&mearas_idr_lock);
		mdev->node = NULL;
		return err;
	}
	return 0;
}

/* After this no new open() finds the device; open files keep their ref. */
void mearas_node_remove(struct mearas_dev *mdev)
{
	device_destroy(mearas_class, MKDEV(MAJOR(mearas_devt), mdev->minor));
	mutex_lock(&mearas_idr_lock);
	idr_remove(&mearas_idr, mdev->minor);
	mutex_unlock(&mearas_idr_lock);
}

static int __init mearas_init(void)
{
	int err;

	err = alloc_chrdev_region(&mearas_devt, 0, MEARAS_MAX_DEVICES,
				  MEARAS_NAME);
	if (err)
		return err;

	cdev_init(&mearas_cdev, &mearas_fops);
	mearas_cdev.owner = THIS_MODULE;
	err = cdev_add(&mearas_cdev, mearas_devt, MEARAS_MAX_DEVICES);
	if (err)
		goto err_region;

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
	mearas_class = class_create(MEARAS_NAME);
#else
	mearas_class = class_create(THIS_MODULE, MEARAS_NAME);
#endif
	if (IS_ERR(mearas_class)) {
		err = PTR_ERR(mearas_class);
		goto err_cdev;
	}

	err = mearas_pci_register();
	if (err)
		goto err_class;
	return 0;

err_class:
	class_destroy(mearas_class);
err_cdev:
	cdev_del(&mearas_cdev);
err_region:
	unregister_chrdev_region(mearas_devt, MEARAS_MAX_DEVICES);
	return err;
}

static void __exit mearas_exit(void)
{
	mearas_pci_unregister();
	class_destroy(mearas_class);
	cdev_del(&mearas_cdev);
	unregister_chrdev_region(mearas_devt, MEARAS_MAX_DEVICES);
	idr_destroy(&mearas_idr);
}

module_init(mearas_init);
module_exit(mearas_exit);

MODULE_DESCRIPTION("mearas: ivshmem shared memory and doorbells for user space");
MODULE_LICENSE("GPL");
