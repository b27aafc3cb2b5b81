// SPDX-License-Identifier: MIT
/*
 * Launch attributes (cudaLaunchKernelExC, cuLaunchKernelEx; the two APIs'
 * attributes have the same ids and value layout): those whose values travel
 * in a LAUNCH record's flags (include/mearas/region.h) are checked here as
 * the driver checks them and packed. Those that name events or device memory
 * (programmatic and completion events, the access policy window) and the
 * stream- or graph-only ones are not carried: the caller gets
 * cudaErrorNotSupported and a log line naming the attribute. A graph kernel
 * node keeps its attributes packed the same way (nodeattr.c).
 */
#include "mearas/log.h"
#include "core.h"

cudaError_t rt_launch_attr(enum cudaLaunchAttributeID id, const cudaLaunchAttributeValue *v, const char *caller,
			   uint32_t *flags, uint32_t cluster[3])
{
	switch (id) {
	case cudaLaunchAttributeIgnore:
		return cudaSuccess;
	case cudaLaunchAttributeCooperative:
		*flags = v->cooperative ? *flags | MEARAS_LAUNCH_COOPERATIVE : *flags & ~MEARAS_LAUNCH_COOPERATIVE;
		return cudaSuccess;
	case cudaLaunchAttributeClusterDimension:
		/* Hopper kernels of cuBLASLt are launched in clusters */
		cluster[0] = v->clusterDim.x;
		cluster[1] = v->clusterDim.y;
		cluster[2] = v->clusterDim.z;
		return cluster[0] && cluster[1] && cluster[2] ? cudaSuccess : cudaErrorInvalidValue;
	case cudaLaunchAttributeProgrammaticStreamSerialization:
		/* cuBLASLt and XLA launch with programmatic dependent launch */
		*flags = v->programmaticStreamSerializationAllowed ? *flags | MEARAS_LAUNCH_PROGRAMMATIC
								   : *flags & ~MEARAS_LAUNCH_PROGRAMMATIC;
		return cudaSuccess;
	case cudaLaunchAttributeMemSyncDomain:
		if ((unsigned)v->memSyncDomain > cudaLaunchMemSyncDomainRemote)
			return cudaErrorInvalidValue;
		*flags = v->memSyncDomain ? *flags | MEARAS_LAUNCH_SYNC_DOMAIN_REMOTE
					  : *flags & ~MEARAS_LAUNCH_SYNC_DOMAIN_REMOTE;
		return cudaSuccess;
	case cudaLaunchAttributeClusterSchedulingPolicyPreference:
		if ((unsigned)v->clusterSchedulingPolicyPreference > cudaClusterSchedulingPolicyLoadBalancing)
			return cudaErrorInvalidValue;
		*flags = (*flags & ~MEARAS_LAUNCH_POLICY_MASK) |
			 (uint32_t)v->clusterSchedulingPolicyPreference << MEARAS_LAUNCH_POLICY_SHIFT;
		return cudaSuccess;
	case cudaLaunchAttributePriority: {
		/* the driver clamps a priority to the device's range, which
		 * lies well inside a signed byte */
		int p = v->priority < -128 ? -128 : v->priority > 127 ? 127 : v->priority;

		*flags = (*flags & ~(0xffu << MEARAS_LAUNCH_PRIORITY_SHIFT)) | MEARAS_LAUNCH_PRIORITY |
			 (uint32_t)(uint8_t)(int8_t)p << MEARAS_LAUNCH_PRIORITY_SHIFT;
		return cudaSuccess;
	}
	case cudaLaunchAttributePreferredSharedMemoryCarveout:
		*flags &= ~(MEARAS_LAUNCH_CARVEOUT | 0xffu << MEARAS_LAUNCH_CARVEOUT_SHIFT);
		if (v->sharedMemCarveout == (unsigned)cudaSharedmemCarveoutDefault)
			return cudaSuccess;
		if (v->sharedMemCarveout > 100)
			return cudaErrorInvalidValue;
		*flags |= MEARAS_LAUNCH_CARVEOUT | v->sharedMemCarveout << MEARAS_LAUNCH_CARVEOUT_SHIFT;
		return cudaSuccess;
	default:
		log_warn("%s: launch attribute %d is not supported by mearas", caller, (int)id);
		return cudaErrorNotSupported;
	}
}

CORE_API cudaError_t rt_launch_attrs(const cudaLaunchAttribute *attrs, unsigned n, const char *caller,
				     uint32_t *flags, uint32_t cluster[3])
{
	if (n && !attrs)
		return cudaErrorInvalidValue;
	for (unsigned i = 0; i < n; i++) {
		cudaError_t e = rt_launch_attr(attrs[i].id, &attrs[i].val, caller, flags, cluster);

		if (e == cudaErrorInvalidValue)
			log_info("%s: launch attribute %d has a value out of its range: invalid value", caller,
				 (int)attrs[i].id);
		if (e)
			return e;
	}
	return cudaSuccess;
}

/* the cluster shape among attrs (all 0 without one), as the occupancy
 * queries take it: the other attributes do not matter there */
CORE_API cudaError_t rt_launch_cluster(const cudaLaunchAttribute *attrs, unsigned n, uint32_t cluster[3])
{
	if (n && !attrs)
		return cudaErrorInvalidValue;
	for (unsigned i = 0; i < n; i++) {
		const cudaLaunchAttributeValue *v = &attrs[i].val;

		if (attrs[i].id != cudaLaunchAttributeClusterDimension)
			continue;
		cluster[0] = v->clusterDim.x;
		cluster[1] = v->clusterDim.y;
		cluster[2] = v->clusterDim.z;
		if (!cluster[0] || !cluster[1] || !cluster[2])
			return cudaErrorInvalidValue;
	}
	return cudaSuccess;
}
