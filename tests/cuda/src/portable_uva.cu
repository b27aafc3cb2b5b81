// Issue 16's report taken literally: a pinned flag allocated with
// cudaHostAllocPortable only (no cudaHostAllocMapped, no
// cudaHostGetDevicePointer): with unified addressing the host pointer is the
// device pointer, so kernels take it as it is. Per device a non-blocking
// stream and two events (one timing, one not) around a kernel that raises
// the flag; the host synchronizes the stream, checks cudaGetLastError, and
// the events. One summary line whatever the number of devices (up to 4).
#include "portable.cuh"

int main(void)
{
    int uva = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&uva, cudaDevAttrUnifiedAddressing, 0));
    REQUIRE(uva == 1, "no unified addressing");
    int *flag = nullptr;
    CHECK_CUDA(cudaHostAlloc((void **)&flag, sizeof(int), cudaHostAllocPortable));
    raise_on_every_device(flag, false);
    printf("every device raised the portable flag through its host pointer, streams and events done\n");
    CHECK_CUDA(cudaFreeHost(flag));
    printf("PASS\n");
    return 0;
}
