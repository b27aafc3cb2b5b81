// cudaDeviceGetByPCIBusId: every device's cudaDeviceGetPCIBusId string names
// the first device with that bus id (vGPUs of one GPU share it), in the full
// and the short (bus:device.function) form; a string that is no bus id is
// cudaErrorInvalidValue, one no device has cudaErrorInvalidDevice.
#include <string>
#include <vector>
#include "sim_check.cuh"

int main(void)
{
    int n;
    CHECK_CUDA(cudaGetDeviceCount(&n));
    REQUIRE(n >= 2, "want 2 or more devices, got %d", n);
    std::vector<std::string> ids;
    for (int d = 0; d < n; d++) {
        char id[32];
        CHECK_CUDA(cudaDeviceGetPCIBusId(id, sizeof(id), d));
        ids.push_back(id);
    }
    for (int d = 0; d < n; d++) {
        int first = 0;
        while (ids[first] != ids[d])
            first++;
        int got = -1;
        CHECK_CUDA(cudaDeviceGetByPCIBusId(&got, ids[d].c_str()));
        REQUIRE(got == first, "%s: device %d, want %d", ids[d].c_str(), got, first);
        // domain 0: bus:device.function alone names it too
        if (ids[d].compare(0, 9, "00000000:") == 0) {
            got = -1;
            CHECK_CUDA(cudaDeviceGetByPCIBusId(&got, ids[d].c_str() + 9));
            REQUIRE(got == first, "%s: device %d, want %d", ids[d].c_str() + 9, got, first);
        }
    }
    int got;
    EXPECT_ERR(cudaErrorInvalidValue, cudaDeviceGetByPCIBusId(&got, "not a bus id"));
    EXPECT_ERR(cudaErrorInvalidValue, cudaDeviceGetByPCIBusId(&got, ""));
    EXPECT_ERR(cudaErrorInvalidValue, cudaDeviceGetByPCIBusId(nullptr, ids[0].c_str()));
    EXPECT_ERR(cudaErrorInvalidValue, cudaDeviceGetByPCIBusId(&got, nullptr));
    EXPECT_ERR(cudaErrorInvalidDevice, cudaDeviceGetByPCIBusId(&got, "0000fffe:fe:1f.0"));
    (void)cudaGetLastError();
    return pass();
}
