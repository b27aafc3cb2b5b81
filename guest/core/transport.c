// SPDX-License-Identifier: MIT
/* Picks the transport: the VM's ivshmem device when there is one, else
 * mearasd's unix socket. Both give the same region format and ring code. */
#include <stdlib.h>
#include <unistd.h>

#include "mearas/kmod_uapi.h"
#include "core.h"

cudaError_t tp_connect(struct rt_transport *tp, int *memfd, uint64_t *memfd_off, uint64_t *region_size,
		       uint64_t *region_addr, unsigned *nvgpus, unsigned *nthreads)
{
	const char *dev = getenv("MEARAS_DEVICE");

	if ((!dev || !*dev) && access(MEARAS_DEV_PREFIX "0", F_OK) == 0)
		dev = MEARAS_DEV_PREFIX "0";
	if (dev && *dev) {
		tp->kind = TP_VM;
		return tpv_connect(tp, dev, memfd, memfd_off, region_size, region_addr, nvgpus, nthreads);
	}
	tp->kind = TP_UNIX;
	*memfd_off = 0;
	return tpu_connect(tp, memfd, region_size, region_addr, nvgpus, nthreads);
}

void tp_kick(struct rt_transport *tp, unsigned vgpu)
{
	if (tp->kind == TP_VM)
		tpv_kick(tp, vgpu);
	else
		tpu_kick(tp, vgpu);
}

bool tp_wait(struct rt_transport *tp, unsigned slot, int timeout_ms)
{
	return tp->kind == TP_VM ? tpv_wait(tp, slot, timeout_ms) : tpu_wait(tp, slot, timeout_ms);
}

void tp_drain_output(struct rt_transport *tp)
{
	if (tp->kind == TP_VM)
		tpv_drain_output(tp);
	else
		tpu_drain_output(tp);
}
