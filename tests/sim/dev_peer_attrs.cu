// cudaDeviceGetP2PAttribute: vGPUs do not reach each other's memory, so
// every attribute of a pair of devices is 0 (as cuDeviceGetP2PAttribute and
// cudaDeviceCanAccessPeer say); a device with itself and a device that does
// not exist are cudaErrorInvalidDevice.
#include "sim_check.cuh"

int main(void)
{
    int n;
    CHECK_CUDA(cudaGetDeviceCount(&n));
    REQUIRE(n >= 2, "want 2 or more devices, got %d", n);
    const cudaDeviceP2PAttr attrs[] = {cudaDevP2PAttrPerformanceRank, cudaDevP2PAttrAccessSupported,
                                       cudaDevP2PAttrNativeAtomicSupported, cudaDevP2PAttrCudaArrayAccessSupported};
    for (auto a : attrs) {
        int v = -1, can = -1;
        CHECK_CUDA(cudaDeviceGetP2PAttribute(&v, a, 0, 1));
        REQUIRE(v == 0, "attribute %d between devices 0 and 1: %d", (int)a, v);
        v = -1;
        CHECK_CUDA(cudaDeviceGetP2PAttribute(&v, a, 1, 0));
        REQUIRE(v == 0, "attribute %d between devices 1 and 0: %d", (int)a, v);
        CHECK_CUDA(cudaDeviceCanAccessPeer(&can, 0, 1));
        REQUIRE(can == 0, "cudaDeviceCanAccessPeer: %d", can);
        EXPECT_ERR(cudaErrorInvalidDevice, cudaDeviceGetP2PAttribute(&v, a, 0, 0));
        EXPECT_ERR(cudaErrorInvalidDevice, cudaDeviceGetP2PAttribute(&v, a, 0, n));
        EXPECT_ERR(cudaErrorInvalidDevice, cudaDeviceGetP2PAttribute(&v, a, -1, 0));
    }
    (void)cudaGetLastError();
    return pass();
}
