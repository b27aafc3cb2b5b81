// SPDX-License-Identifier: GPL-2.0
/* mearas: file operations of /dev/mearasN (mmap, ioctl, read, poll). */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "mearas.h"

/* Pages mapped per fault: the aligned 2 MiB chunk around the faulting page. */
#define MEARAS_FAULT_AROUND_PAGES 512UL

/* Does BAR2 hold a mearas VM header? Caller holds mdev->lock, !dead. Only
 * the host writes the header page: no guest process can map it then. */
static bool mearas_vm_mode(struct mearas_dev *mdev)
{
	return mdev->shm_size >= PAGE_SIZE && READ_ONCE(*(u64 *)mdev->shm) == MEARAS_VMH_MAGIC;
}

static void *vmh(struct mearas_dev *mdev, u64 off)
{
	return (u8 *)mdev->shm + off;
}

static u32 *vmh_slot(struct mearas_dev *mdev, unsigned int k, unsigned int field)
{
	return vmh(mdev, MEARAS_VMH_OFF_SLOTS + (u64)k * MEARAS_VMH_SLOT_BYTES + field);
}

static void mearas_ring_host(struct mearas_dev *mdev)
{
	if (mdev->doorbell)
		iowrite32((MEARAS_HOST_PEER_ID << 16) | MEARAS_VMH_VEC_HOST, mdev->regs + MEARAS_REG_DOORBELL);
}

static bool within(u64 off, u64 len, u64 start, u64 size)
{
	return off >= start && len <= size && off - start <= size - len;
}

/* May this file map [off, off + len) of a mearas VM's BAR2? Its slot's
 * region and output area only, and only once the host has set the slot up
 * for this claim (ready == its token): a slot given back is claimable at
 * once, but holds the previous owner's rings, data and output until the
 * host has stopped its slot worker and zeroed it. Caller holds mdev->lock,
 * !dead. */
static bool mearas_vm_allowed(struct mearas_file *mf, u64 off, u64 len)
{
	int k = smp_load_acquire(&mf->vm_slot);

	if (k < 0 ||
	    smp_load_acquire(vmh_slot(mf->mdev, k, MEARAS_VMH_SLOT_READY)) != mf->vm_token)
		return false;
	return within(off, len, mf->vm_region_off, mf->vm_region_size) ||
	       within(off, len, mf->vm_out_off, MEARAS_VMH_OUT_BYTES);
}

static int mearas_open(struct inode *inode, struct file *file)
{
	struct mearas_dev *mdev = mearas_dev_get_by_minor(iminor(inode));
	struct mearas_file *mf;
	unsigned int i;

	if (!mdev)
		return -ENODEV;
	mf = kzalloc(sizeof(*mf), GFP_KERNEL);
	if (!mf) {
		mearas_dev_put(mdev);
		return -ENOMEM;
	}
	mf->mdev = mdev;
	mf->file = file;
	mutex_init(&mf->read_lock);
	mutex_init(&mf->claims_lock);
	mf->vm_slot = -1;
	for (i = 0; i < MEARAS_MAX_VECTORS; i++)
		mf->seen[i] = atomic64_read(&mdev->irq_count[i]);

	mutex_lock(&mdev->files_lock);
	list_add(&mf->node, &mdev->files);
	mutex_unlock(&mdev->files_lock);
	file->private_data = mf;
	return 0;
}

/* Gives back what this file claimed: its owner is gone. */
static void mearas_undo_claims(struct mearas_file *mf)
{
	struct mearas_dev *mdev = mf->mdev;
	unsigned int i;

	down_read(&mdev->lock);
	for (i = 0; i < mf->nr_claims && !mdev->dead; i++) {
		struct mearas_claim *c = &mf->claims[i];
		u32 *word = (u32 *)((u8 *)mdev->shm + c->offset);

		if (cmpxchg(word, c->value, c->release_value) != c->value)
			continue;
		if (mdev->doorbell)
			iowrite32((c->db_peer << 16) | c->db_vector,
				  mdev->regs + MEARAS_REG_DOORBELL);
	}
	mf->nr_claims = 0;
	up_read(&mdev->lock);
}

static int mearas_release(struct inode *inode, struct file *file)
{
	struct mearas_file *mf = file->private_data;
	struct mearas_dev *mdev = mf->mdev;

	mearas_undo_claims(mf);
	mutex_lock(&mdev->files_lock);
	list_del(&mf->node);
	mutex_unlock(&mdev->files_lock);
	put_pid(mf->vm_owner);
	kfree(mf);
	mearas_dev_put(mdev);
	return 0;
}

static vm_fault_t mearas_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct mearas_file *mf = vma->vm_private_data;
	struct mearas_dev *mdev = mf->mdev;
	unsigned long chunk = MEARAS_FAULT_AROUND_PAGES << PAGE_SHIFT;
	bool vm;
	unsigned long start = max(vma->vm_start, vmf->address & ~(chunk - 1));
	unsigned long end = min(vma->vm_end, start + chunk);
	unsigned long addr, pgoff;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	down_read(&mdev->lock);
	if (mdev->dead)
		goto out;
	vm = mearas_vm_mode(mdev);
	/* mmap() checked that the whole vma lies inside BAR2 (and, for a mearas
	 * VM, inside this file's slot: checked again, the slot may be gone). */
	for (addr = start; addr < end; addr += PAGE_SIZE) {
		unsigned long pfn;
		vm_fault_t r;

		pgoff = vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT);
		pfn = (mdev->shm_phys >> PAGE_SHIFT) + pgoff;
		if (vm && !mearas_vm_allowed(mf, (u64)pgoff << PAGE_SHIFT, PAGE_SIZE))
			r = VM_FAULT_SIGBUS;
		else if (vm && ((u64)pgoff << PAGE_SHIFT) == mf->vm_region_off)
			/* the slot's region header is the host's: read-only */
			r = vmf_insert_pfn_prot(vma, addr, pfn, vm_get_page_prot(vma->vm_flags & ~VM_WRITE));
		else
			/* writable now if the vma is: pfn_mkwrite (which makes the
			 * core map pages read-only first) need not run per page */
			r = vmf_insert_pfn_prot(vma, addr, pfn, vm_get_page_prot(vma->vm_flags));
		if (addr == (vmf->address & PAGE_MASK))
			ret = r;
		if (r & VM_FAULT_ERROR)
			break;
	}
	if (ret == 0)
		ret = VM_FAULT_NOPAGE;
out:
	up_read(&mdev->lock);
	return ret;
}

/* A write to a page inserted read-only in a writable mapping: refused for a
 * slot's region header, allowed otherwise (a mapping made writable by
 * mprotect() after its pages were inserted). */
static vm_fault_t mearas_vm_pfn_mkwrite(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct mearas_file *mf = vma->vm_private_data;
	struct mearas_dev *mdev = mf->mdev;
	u64 off = (u64)(vma->vm_pgoff + ((vmf->address - vma->vm_start) >> PAGE_SHIFT)) << PAGE_SHIFT;
	vm_fault_t ret = 0;

	down_read(&mdev->lock);
	if (mdev->dead)
		ret = VM_FAULT_SIGBUS;
	else if (mearas_vm_mode(mdev) && (!mearas_vm_allowed(mf, off, PAGE_SIZE) || off == mf->vm_region_off))
		ret = VM_FAULT_SIGBUS;
	up_read(&mdev->lock);
	return ret;
}

static const struct vm_operations_struct mearas_vm_ops = {
	.fault = mearas_vm_fault,
	.pfn_mkwrite = mearas_vm_pfn_mkwrite,
};

static int mearas_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct mearas_file *mf = file->private_data;
	struct mearas_dev *mdev = mf->mdev;
	unsigned long shm_pages = mdev->shm_size >> PAGE_SHIFT;
	int err = 0;

	/* Private (copy-on-write) copies of device memory make no sense. */
	if ((vma->vm_flags & (VM_SHARED | VM_MAYWRITE)) == VM_MAYWRITE)
		return -EINVAL;
	if (vma->vm_pgoff >= shm_pages ||
	    vma_pages(vma) > shm_pages - vma->vm_pgoff)
		return -EINVAL;

	down_read(&mdev->lock);
	if (mdev->dead) {
		err = -ENODEV;
		goto out;
	}
	/* a mearas VM: this file's slot and output area, nothing else */
	if (mearas_vm_mode(mdev) &&
	    !mearas_vm_allowed(mf, (u64)vma->vm_pgoff << PAGE_SHIFT, vma->vm_end - vma->vm_start)) {
		err = -EACCES;
		goto out;
	}
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP;
#endif
	vma->vm_private_data = mf;
	vma->vm_ops = &mearas_vm_ops;
out:
	up_read(&mdev->lock);
	return err;
}

static long mearas_ioctl_info(struct mearas_dev *mdev, void __user *arg)
{
	struct mearas_info info = { 0 };

	down_read(&mdev->lock);
	if (mdev->dead) {
		up_read(&mdev->lock);
		return -ENODEV;
	}
	info.shm_size = mdev->shm_size;
	info.peer_id = mearas_read_peer_id(mdev);
	info.nr_vectors = mdev->nr_vectors;
	info.flags = mdev->doorbell ? MEARAS_INFO_DOORBELL : 0;
	up_read(&mdev->lock);

	return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long mearas_ioctl_ring(struct mearas_dev *mdev, void __user *arg)
{
	struct mearas_doorbell db;
	long ret = 0;

	if (copy_from_user(&db, arg, sizeof(db)))
		return -EFAULT;
	if (db.peer_id > MEARAS_MAX_PEER_ID || db.vector >= MEARAS_MAX_VECTORS)
		return -EINVAL;

	down_read(&mdev->lock);
	if (mdev->dead)
		ret = -ENODEV;
	else if (!mdev->doorbell)
		ret = -EOPNOTSUPP;
	else
		iowrite32((db.peer_id << 16) | db.vector,
			  mdev->regs + MEARAS_REG_DOORBELL);
	up_read(&mdev->lock);
	return ret;
}

static long mearas_ioctl_wait(struct mearas_dev *mdev, void __user *arg)
{
	struct mearas_wait w;
	atomic64_t *counter;
	long left;
	long ret;

	if (copy_from_user(&w, arg, sizeof(w)))
		return -EFAULT;
	if (READ_ONCE(mdev->dead))
		return -ENODEV;
	if (!mdev->doorbell)
		return -EOPNOTSUPP;
	if (w.vector >= mdev->nr_vectors)
		return -EINVAL;

	counter = &mdev->irq_count[w.vector];
	left = wait_event_interruptible_timeout(mdev->wq,
			(u64)atomic64_read(counter) != w.last_seen ||
			READ_ONCE(mdev->dead),
			msecs_to_jiffies(w.timeout_ms));
	w.count = atomic64_read(counter);
	if (READ_ONCE(mdev->dead))
		ret = -ENODEV;
	else if (w.count != w.last_seen)
		ret = 0;
	else if (left < 0)
		ret = -EINTR;
	else
		ret = -ETIMEDOUT;

	if (copy_to_user(arg, &w, sizeof(w)))
		return -EFAULT;
	return ret;
}

static long mearas_ioctl_claim(struct mearas_file *mf, void __user *arg)
{
	struct mearas_dev *mdev = mf->mdev;
	struct mearas_claim c;
	u32 old;
	long ret = 0;

	if (copy_from_user(&c, arg, sizeof(c)))
		return -EFAULT;
	if (c.reserved || (c.offset & 3) || c.db_peer > MEARAS_MAX_PEER_ID ||
	    c.db_vector >= MEARAS_MAX_VECTORS)
		return -EINVAL;

	mutex_lock(&mf->claims_lock);
	down_read(&mdev->lock);
	if (mdev->dead) {
		ret = -ENODEV;
		goto out;
	}
	if (c.offset >= mdev->shm_size || mdev->shm_size - c.offset < 4) {
		ret = -EINVAL;
		goto out;
	}
	if (mearas_vm_mode(mdev)) {
		/* the VM header's words are claimed through MEARAS_IOC_VM_CLAIM */
		ret = -EPERM;
		goto out;
	}
	if (mf->nr_claims >= MEARAS_MAX_CLAIMS) {
		ret = -ENOSPC;
		goto out;
	}
	old = cmpxchg((u32 *)((u8 *)mdev->shm + c.offset), c.expect, c.value);
	if (old != c.expect) {
		c.expect = old;
		ret = -EBUSY;
	} else {
		mf->claims[mf->nr_claims++] = c;
	}
out:
	up_read(&mdev->lock);
	mutex_unlock(&mf->claims_lock);
	if (ret == -EBUSY && copy_to_user(arg, &c, sizeof(c)))
		return -EFAULT;
	return ret;
}

/* Does another file of this device hold a slot claimed by this process?
 * Caller holds mdev->files_lock. */
static bool mearas_vm_process_has_slot(struct mearas_dev *mdev)
{
	struct pid *me = task_tgid(current);
	struct mearas_file *f;

	list_for_each_entry(f, &mdev->files, node)
		if (READ_ONCE(f->vm_slot) >= 0 && f->vm_owner == me)
			return true;
	return false;
}

static long mearas_ioctl_vm_claim(struct mearas_file *mf, void __user *arg)
{
	struct mearas_dev *mdev = mf->mdev;
	struct mearas_vm_claim out = { 0 };
	struct mearas_claim *c;
	u64 slot_off, slot_size;
	u32 nslots, nvgpus, token;
	unsigned int k;
	long ret = 0;

	mutex_lock(&mf->claims_lock);
	down_read(&mdev->lock);
	if (mdev->dead) {
		ret = -ENODEV;
		goto out;
	}
	if (!mearas_vm_mode(mdev)) {
		ret = -EOPNOTSUPP;
		goto out;
	}
	if (mf->vm_slot >= 0) {
		ret = -EALREADY;
		goto out;
	}
	if (mf->nr_claims >= MEARAS_MAX_CLAIMS) {
		ret = -ENOSPC;
		goto out;
	}
	nslots = READ_ONCE(*(u32 *)vmh(mdev, MEARAS_VMH_OFF_NSLOTS));
	nvgpus = READ_ONCE(*(u32 *)vmh(mdev, MEARAS_VMH_OFF_NVGPUS));
	slot_off = READ_ONCE(*(u64 *)vmh(mdev, MEARAS_VMH_OFF_SLOT_OFF));
	slot_size = READ_ONCE(*(u64 *)vmh(mdev, MEARAS_VMH_OFF_SLOT_SIZE));
	if (!nslots || nslots > MEARAS_VMH_MAX_SLOTS || !nvgpus || nvgpus > 32 || !slot_size ||
	    slot_off < MEARAS_VMH_OUT_OFF + MEARAS_VMH_MAX_SLOTS * MEARAS_VMH_OUT_BYTES ||
	    ((slot_off | slot_size) & ~PAGE_MASK) || slot_off > mdev->shm_size ||
	    slot_size > div_u64(mdev->shm_size - slot_off, nslots)) {
		ret = -EPROTO;
		goto out;
	}
	do {
		token = get_random_u32();
	} while (!token);
	/* one slot per process: one cannot take every slot from the VM's
	 * other processes by opening the device again (checked and claimed
	 * under files_lock, so two threads cannot both pass) */
	mutex_lock(&mdev->files_lock);
	if (mearas_vm_process_has_slot(mdev)) {
		mutex_unlock(&mdev->files_lock);
		ret = -EALREADY;
		goto out;
	}
	for (k = 0; k < nslots; k++)
		if (cmpxchg(vmh_slot(mdev, k, MEARAS_VMH_SLOT_CLAIM), 0, token) == 0)
			break;
	if (k == nslots) {
		mutex_unlock(&mdev->files_lock);
		ret = -EBUSY;
		goto out;
	}
	WRITE_ONCE(*vmh_slot(mdev, k, MEARAS_VMH_SLOT_OWNER_PID), (u32)task_tgid_nr(current));
	/* given back (and the host told) when the file is released */
	c = &mf->claims[mf->nr_claims++];
	memset(c, 0, sizeof(*c));
	c->offset = (u8 *)vmh_slot(mdev, k, MEARAS_VMH_SLOT_CLAIM) - (u8 *)mdev->shm;
	c->value = token;
	c->db_peer = MEARAS_HOST_PEER_ID;
	c->db_vector = MEARAS_VMH_VEC_HOST;
	mf->vm_token = token;
	mf->vm_nvgpus = nvgpus;
	mf->vm_region_off = slot_off + slot_size * k;
	mf->vm_region_size = slot_size;
	mf->vm_out_off = MEARAS_VMH_OUT_OFF + (u64)k * MEARAS_VMH_OUT_BYTES;
	put_pid(mf->vm_owner);
	mf->vm_owner = get_pid(task_tgid(current));
	smp_store_release(&mf->vm_slot, (int)k);
	mutex_unlock(&mdev->files_lock);
	mearas_ring_host(mdev);
	out.slot = k;
	out.token = token;
	out.nslots = nslots;
	out.nvgpus = nvgpus;
	out.region_off = mf->vm_region_off;
	out.region_size = slot_size;
	out.region_addr = READ_ONCE(*(u64 *)vmh_slot(mdev, k, MEARAS_VMH_SLOT_REGION_ADDR));
	out.out_off = mf->vm_out_off;
	out.out_size = MEARAS_VMH_OUT_BYTES;
out:
	up_read(&mdev->lock);
	mutex_unlock(&mf->claims_lock);
	if (!ret && copy_to_user(arg, &out, sizeof(out)))
		return -EFAULT;
	return ret;
}

static long mearas_ioctl_vm_kick(struct mearas_file *mf, u32 __user *arg)
{
	struct mearas_dev *mdev = mf->mdev;
	long ret = 0;
	int k;
	u32 mask;

	if (get_user(mask, arg))
		return -EFAULT;
	down_read(&mdev->lock);
	k = smp_load_acquire(&mf->vm_slot);
	if (mdev->dead) {
		ret = -ENODEV;
	} else if (k < 0 || !mearas_vm_mode(mdev)) {
		ret = -EINVAL;
	} else {
		if (mf->vm_nvgpus < 32)
			mask &= (1u << mf->vm_nvgpus) - 1;
		atomic_or(mask, (atomic_t *)vmh_slot(mdev, k, MEARAS_VMH_SLOT_KICK));
		mearas_ring_host(mdev);
	}
	up_read(&mdev->lock);
	return ret;
}

static long mearas_ioctl_vm_state(struct mearas_file *mf, void __user *arg)
{
	struct mearas_dev *mdev = mf->mdev;
	struct mearas_vm_state st = { 0 };
	long ret = 0;
	int k;

	down_read(&mdev->lock);
	k = smp_load_acquire(&mf->vm_slot);
	if (mdev->dead) {
		ret = -ENODEV;
	} else if (!mearas_vm_mode(mdev)) {
		ret = -EOPNOTSUPP;
	} else {
		st.vm_state = READ_ONCE(*(u32 *)vmh(mdev, MEARAS_VMH_OFF_STATE));
		st.heartbeat = READ_ONCE(*(u32 *)vmh(mdev, MEARAS_VMH_OFF_HEARTBEAT));
		st.ready = k < 0 ? 0 : smp_load_acquire(vmh_slot(mdev, k, MEARAS_VMH_SLOT_READY));
	}
	up_read(&mdev->lock);
	if (!ret && copy_to_user(arg, &st, sizeof(st)))
		return -EFAULT;
	return ret;
}

static void mearas_undo_claims(struct mearas_file *mf);

static long mearas_ioctl_vm_release(struct mearas_file *mf)
{
	struct mearas_dev *mdev = mf->mdev;

	mutex_lock(&mf->claims_lock);
	if (mf->vm_slot < 0) {
		mutex_unlock(&mf->claims_lock);
		return -EINVAL;
	}
	/* A fault checks the slot and inserts its page under mdev->lock held
	 * for reading: once this write section is over, every fault that saw
	 * the slot has inserted its page (the unmap below takes it away) and
	 * every later one sees none. */
	down_write(&mdev->lock);
	smp_store_release(&mf->vm_slot, -1);
	up_write(&mdev->lock);
	/* no page of the slot stays mapped for whoever claims it next (other
	 * files' mappings fault back in what they may map), and only then is
	 * the slot given back */
	unmap_mapping_range(mf->file->f_mapping, 0, 0, 1);
	mearas_undo_claims(mf);
	mutex_unlock(&mf->claims_lock);
	return 0;
}

static long mearas_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct mearas_file *mf = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case MEARAS_IOC_INFO:
		return mearas_ioctl_info(mf->mdev, uarg);
	case MEARAS_IOC_RING:
		return mearas_ioctl_ring(mf->mdev, uarg);
	case MEARAS_IOC_WAIT:
		return mearas_ioctl_wait(mf->mdev, uarg);
	case MEARAS_IOC_CLAIM:
		return mearas_ioctl_claim(mf, uarg);
	case MEARAS_IOC_VM_CLAIM:
		return mearas_ioctl_vm_claim(mf, uarg);
	case MEARAS_IOC_VM_KICK:
		return mearas_ioctl_vm_kick(mf, uarg);
	case MEARAS_IOC_VM_STATE:
		return mearas_ioctl_vm_state(mf, uarg);
	case MEARAS_IOC_VM_RELEASE:
		return mearas_ioctl_vm_release(mf);
	default:
		return -ENOTTY;
	}
}

/* Mask of vectors whose counter moved since this fd's last read(). */
static u64 mearas_pending(struct mearas_file *mf, bool consume)
{
	struct mearas_dev *mdev = mf->mdev;
	u64 mask = 0;
	unsigned int i;

	for (i = 0; i < mdev->nr_vectors; i++) {
		u64 now = atomic64_read(&mdev->irq_count[i]);

		if (now != READ_ONCE(mf->seen[i])) {
			mask |= 1ULL << i;
			if (consume)
				WRITE_ONCE(mf->seen[i], now);
		}
	}
	return mask;
}

static ssize_t mearas_read(struct file *file, char __user *buf, size_t len,
			   loff_t *ppos)
{
	struct mearas_file *mf = file->private_data;
	struct mearas_dev *mdev = mf->mdev;
	u64 mask;
	ssize_t ret;

	if (len < sizeof(mask))
		return -EINVAL;
	if (mutex_lock_interruptible(&mf->read_lock))
		return -ERESTARTSYS;
	for (;;) {
		if (READ_ONCE(mdev->dead)) {
			ret = -ENODEV;
			break;
		}
		mask = mearas_pending(mf, true);
		if (mask) {
			ret = copy_to_user(buf, &mask, sizeof(mask)) ?
				-EFAULT : sizeof(mask);
			break;
		}
		if (file->f_flags & O_NONBLOCK) {
			ret = -EAGAIN;
			break;
		}
		if (wait_event_interruptible(mdev->wq,
					     mearas_pending(mf, false) ||
					     READ_ONCE(mdev->dead))) {
			ret = -ERESTARTSYS;
			break;
		}
	}
	mutex_unlock(&mf->read_lock);
	return ret;
}

static __poll_t mearas_poll(struct file *file, poll_table *wait)
{
	struct mearas_file *mf = file->private_data;
	struct mearas_dev *mdev = mf->mdev;

	poll_wait(file, &mdev->wq, wait);
	if (READ_ONCE(mdev->dead))
		return EPOLLERR | EPOLLHUP;
	return mearas_pending(mf, false) ? EPOLLIN | EPOLLRDNORM : 0;
}

const struct file_operations mearas_fops = {
	.owner = THIS_MODULE,
	.open = mearas_open,
	.release = mearas_release,
	.mmap = mearas_mmap,
	.unlocked_ioctl = mearas_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.read = mearas_read,
	.poll = mearas_poll,
	.llseek = noop_llseek,
};
