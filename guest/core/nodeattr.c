// SPDX-License-Identifier: MIT
/*
 * A graph kernel node's attributes (cudaGraphKernelNodeSetAttribute and
 * GetAttribute, their driver twins), kept packed as a LAUNCH carries them
 * (launchattr.c) and replayed with the node's launch. What the driver does
 * that a launch's attributes do not: a priority is clamped to the device's
 * range when set, a cluster shape must divide the node's grid
 * (cudaErrorInvalidClusterSize; all 0s: none), and an attribute never set
 * reads as its default. A cluster scheduling policy past the known ones,
 * which the driver keeps on a node, is refused (a LAUNCH has no room for
 * it). The attributes CUDA lists for kernel nodes that a LAUNCH does not
 * carry (the access policy window, the sync domain map, the preferred
 * cluster shape, device updatable nodes, the NVLink hint) read as their
 * defaults (or, as the driver reads the preferred cluster shape and the
 * NVLink hint never set, invalid) and may be set to them; any other value
 * is cudaErrorNotSupported with a log line. A launch's or a stream's
 * attribute on a node is cudaErrorInvalidValue, as the driver answers.
 */
#include <string.h>

#include "mearas/log.h"
#include "core.h"

/* 1: carried in a LAUNCH; 0: a kernel node's, not carried; -1: not a kernel
 * node's (CU_KERNEL_NODE_ATTRIBUTE_* and the NVLink hint are) */
static int node_attr(int id)
{
	switch (id) {
	case cudaLaunchAttributeCooperative:
	case cudaLaunchAttributeClusterDimension:
	case cudaLaunchAttributeClusterSchedulingPolicyPreference:
	case cudaLaunchAttributeMemSyncDomain:
	case cudaLaunchAttributePriority:
	case cudaLaunchAttributePreferredSharedMemoryCarveout:
		return 1;
	case cudaLaunchAttributeAccessPolicyWindow:
	case cudaLaunchAttributeMemSyncDomainMap:
	case cudaLaunchAttributePreferredClusterDimension:
	case cudaLaunchAttributeDeviceUpdatableKernelNode:
	case cudaLaunchAttributeNvlinkUtilCentricScheduling:
		return 0;
	default:
		return -1;
	}
}

static cudaError_t refused(int id, const char *caller)
{
	if (node_attr(id) < 0) {
		log_info("%s: attribute %d is not one of a kernel node: invalid value", caller, id);
		return cudaErrorInvalidValue;
	}
	log_warn("%s: kernel node attribute %d (other than its default) is not supported by mearas", caller, id);
	return cudaErrorNotSupported;
}

/* whether v holds the default of an attribute a LAUNCH does not carry
 * (the default is what runs) */
static bool is_default(int id, const cudaLaunchAttributeValue *v)
{
	switch (id) {
	case cudaLaunchAttributeAccessPolicyWindow:
		return !v->accessPolicyWindow.num_bytes; /* no window */
	case cudaLaunchAttributeMemSyncDomainMap:
		return v->memSyncDomainMap.default_ == 0 && v->memSyncDomainMap.remote == 1;
	case cudaLaunchAttributeDeviceUpdatableKernelNode:
		return !v->deviceUpdatableKernelNode.deviceUpdatable;
	case cudaLaunchAttributeNvlinkUtilCentricScheduling:
		return !v->nvlinkUtilCentricScheduling;
	default:
		return false;
	}
}

/* the default of an attribute a LAUNCH does not carry into v; false where
 * the driver reads it back as invalid (the preferred cluster shape and the
 * NVLink hint, never set) */
static bool put_default(int id, cudaLaunchAttributeValue *v)
{
	switch (id) {
	case cudaLaunchAttributeAccessPolicyWindow:
		memset(&v->accessPolicyWindow, 0, sizeof(v->accessPolicyWindow));
		return true;
	case cudaLaunchAttributeMemSyncDomainMap:
		v->memSyncDomainMap.default_ = 0;
		v->memSyncDomainMap.remote = 1;
		return true;
	case cudaLaunchAttributeDeviceUpdatableKernelNode:
		memset(&v->deviceUpdatableKernelNode, 0, sizeof(v->deviceUpdatableKernelNode));
		return true;
	default:
		return false;
	}
}

cudaError_t rt_kernel_node_attr_set(int id, const cudaLaunchAttributeValue *v, const char *caller,
				    const uint32_t grid[3], uint32_t *flags, uint32_t cluster[3])
{
	uint32_t f = *flags, c[3] = { cluster[0], cluster[1], cluster[2] };
	cudaLaunchAttributeValue clamped;
	cudaError_t e;

	if (!v)
		return cudaErrorInvalidValue;
	if (node_attr(id) == 0 && is_default(id, v))
		return cudaSuccess;
	if (node_attr(id) != 1)
		return refused(id, caller);
	if (id == cudaLaunchAttributeClusterDimension) {
		const uint32_t want[3] = { v->clusterDim.x, v->clusterDim.y, v->clusterDim.z };

		if (!want[0] && !want[1] && !want[2]) {
			memset(cluster, 0, 3 * sizeof(*cluster)); /* none, as never set */
			return cudaSuccess;
		}
		for (int i = 0; i < 3; i++)
			if (!want[i] || grid[i] % want[i]) {
				log_info("%s: a cluster of %u x %u x %u blocks does not divide the node's grid", caller,
					 want[0], want[1], want[2]);
				return cudaErrorInvalidClusterSize;
			}
	}
	if (id == cudaLaunchAttributePriority) {
		clamped = *v;
		clamped.priority = rt_priority_clamp(v->priority);
		v = &clamped;
	}
	e = rt_launch_attr((enum cudaLaunchAttributeID)id, v, caller, &f, c);
	if (e) {
		log_info("%s: kernel node attribute %d has a value out of its range: invalid value", caller, id);
		return e;
	}
	*flags = f;
	memcpy(cluster, c, sizeof(c));
	return cudaSuccess;
}

/* only the member of id is written, as CUDA writes it; an attribute never
 * set reads as the driver reads it: 0 (no cluster shape, default policy,
 * domain, priority and carveout) */
cudaError_t rt_kernel_node_attr_get(int id, uint32_t flags, const uint32_t cluster[3], const char *caller,
				    cudaLaunchAttributeValue *v)
{
	if (!v)
		return cudaErrorInvalidValue;
	switch (id) {
	case cudaLaunchAttributeCooperative:
		v->cooperative = (flags & MEARAS_LAUNCH_COOPERATIVE) != 0;
		return cudaSuccess;
	case cudaLaunchAttributeClusterDimension:
		v->clusterDim.x = cluster[0];
		v->clusterDim.y = cluster[1];
		v->clusterDim.z = cluster[2];
		return cudaSuccess;
	case cudaLaunchAttributeClusterSchedulingPolicyPreference:
		v->clusterSchedulingPolicyPreference = (enum cudaClusterSchedulingPolicy)(
			(flags & MEARAS_LAUNCH_POLICY_MASK) >> MEARAS_LAUNCH_POLICY_SHIFT);
		return cudaSuccess;
	case cudaLaunchAttributeMemSyncDomain:
		v->memSyncDomain = flags & MEARAS_LAUNCH_SYNC_DOMAIN_REMOTE ? cudaLaunchMemSyncDomainRemote
									   : cudaLaunchMemSyncDomainDefault;
		return cudaSuccess;
	case cudaLaunchAttributePriority:
		v->priority = flags & MEARAS_LAUNCH_PRIORITY ? (int8_t)(flags >> MEARAS_LAUNCH_PRIORITY_SHIFT) : 0;
		return cudaSuccess;
	case cudaLaunchAttributePreferredSharedMemoryCarveout:
		v->sharedMemCarveout = flags & MEARAS_LAUNCH_CARVEOUT ? (flags >> MEARAS_LAUNCH_CARVEOUT_SHIFT) & 0xffu
								      : 0;
		return cudaSuccess;
	case cudaLaunchAttributePreferredClusterDimension:
	case cudaLaunchAttributeNvlinkUtilCentricScheduling:
		log_info("%s: kernel node attribute %d was never set: invalid value", caller, id);
		return cudaErrorInvalidValue;
	default:
		if (node_attr(id) == 0 && put_default(id, v))
			return cudaSuccess;
		return refused(id, caller);
	}
}
