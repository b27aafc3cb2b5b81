// Stream attributes: the wait policy is kept per stream (created or
// default; -1 until set, as the driver says), read back and copied by
// cudaStreamCopyAttributes; priority reads
// the stream's; the memory synchronization domain, its map and the access
// policy window read their defaults and take them again, and anything else is
// cudaErrorNotSupported (not carried to the GPU yet); values out of range and
// ids that are no stream attribute are cudaErrorInvalidValue.
#include "sim_check.cuh"

static cudaStreamAttrValue get(cudaStream_t s, cudaStreamAttrID id)
{
    cudaStreamAttrValue v;
    memset(&v, 0x5a, sizeof(v));
    CHECK_CUDA(cudaStreamGetAttribute(s, id, &v));
    return v;
}

int main(void)
{
    int least, greatest;
    CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t s, t;
    CHECK_CUDA(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
    CHECK_CUDA(cudaStreamCreate(&t));

    // never set: -1, as NVIDIA's driver answers
    REQUIRE((int)get(s, cudaStreamAttributeSynchronizationPolicy).syncPolicy == -1, "default policy");
    cudaStreamAttrValue v = {};
    v.syncPolicy = cudaSyncPolicySpin;
    CHECK_CUDA(cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &v));
    REQUIRE(get(s, cudaStreamAttributeSynchronizationPolicy).syncPolicy == cudaSyncPolicySpin, "policy read back");
    REQUIRE((int)get(t, cudaStreamAttributeSynchronizationPolicy).syncPolicy == -1, "another stream's policy");
    CHECK_CUDA(cudaStreamCopyAttributes(t, s));
    REQUIRE(get(t, cudaStreamAttributeSynchronizationPolicy).syncPolicy == cudaSyncPolicySpin, "policy copied");
    v.syncPolicy = cudaSyncPolicyYield;
    CHECK_CUDA(cudaStreamSetAttribute(0, cudaStreamAttributeSynchronizationPolicy, &v));
    REQUIRE(get(0, cudaStreamAttributeSynchronizationPolicy).syncPolicy == cudaSyncPolicyYield, "stream 0's policy");
    v.syncPolicy = (cudaSynchronizationPolicy)0;
    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &v));
    v.syncPolicy = (cudaSynchronizationPolicy)5;
    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &v));

    REQUIRE(get(s, cudaStreamAttributePriority).priority == greatest, "priority");
    REQUIRE(get(t, cudaStreamAttributePriority).priority == 0, "default priority");
    v = {};
    v.priority = greatest;
    CHECK_CUDA(cudaStreamSetAttribute(s, cudaStreamAttributePriority, &v));
    v.priority = least;
    EXPECT_ERR(cudaErrorNotSupported, cudaStreamSetAttribute(s, cudaStreamAttributePriority, &v));

    REQUIRE(get(s, cudaStreamAttributeAccessPolicyWindow).accessPolicyWindow.num_bytes == 0, "no window");
    v = {};
    CHECK_CUDA(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
    v.accessPolicyWindow.num_bytes = 4096;
    v.accessPolicyWindow.hitRatio = 1.0f;
    EXPECT_ERR(cudaErrorNotSupported, cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));

    cudaStreamAttrValue map = get(s, cudaStreamAttributeMemSyncDomainMap);
    REQUIRE(map.memSyncDomainMap.default_ == 0 && map.memSyncDomainMap.remote == 1, "domain map %u %u",
            map.memSyncDomainMap.default_, map.memSyncDomainMap.remote);
    CHECK_CUDA(cudaStreamSetAttribute(s, cudaStreamAttributeMemSyncDomainMap, &map));
    map.memSyncDomainMap.remote = 0;
    EXPECT_ERR(cudaErrorNotSupported, cudaStreamSetAttribute(s, cudaStreamAttributeMemSyncDomainMap, &map));
    REQUIRE(get(s, cudaStreamAttributeMemSyncDomain).memSyncDomain == cudaLaunchMemSyncDomainDefault, "domain");
    v = {};
    v.memSyncDomain = cudaLaunchMemSyncDomainRemote;
    EXPECT_ERR(cudaErrorNotSupported, cudaStreamSetAttribute(s, cudaStreamAttributeMemSyncDomain, &v));
    v.memSyncDomain = (cudaLaunchMemSyncDomain)7;
    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamSetAttribute(s, cudaStreamAttributeMemSyncDomain, &v));

    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamGetAttribute(s, cudaLaunchAttributeCooperative, &v));
    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamSetAttribute(s, cudaLaunchAttributeCooperative, &v));
    // (no place for the value: NVIDIA's runtime writes there all the same)
    (void)cudaGetLastError();
    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaStreamDestroy(t));
    return pass();
}
