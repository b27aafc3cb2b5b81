// The launch attributes with values that the GPU lane's launch_attrs and the
// sim's (tests/sim/launch_attrs.cu) both set together.
#pragma once

#include <cuda_runtime.h>

// a[0..3]: the given priority, the remote memory-sync domain, the spread
// cluster scheduling policy and a shared-memory carveout of 50 percent
static inline void value_attrs(cudaLaunchAttribute *a, int priority)
{
    a[0].id = cudaLaunchAttributePriority;
    a[0].val.priority = priority;
    a[1].id = cudaLaunchAttributeMemSyncDomain;
    a[1].val.memSyncDomain = cudaLaunchMemSyncDomainRemote;
    a[2].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
    a[2].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicySpread;
    a[3].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    a[3].val.sharedMemCarveout = 50;
}
