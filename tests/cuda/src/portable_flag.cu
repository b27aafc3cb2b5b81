// The shape of a program reported to fail in a VM guest on a GPU (issue 16):
// a portable pinned flag shared by every device, then per device a
// non-blocking stream and two events (one timing, one not); a kernel on each
// stream raises the flag through its mapped device pointer between the two
// events; the host synchronizes each stream and checks cudaGetLastError.
// Every device (up to 4) is checked, but the output is one line whatever
// their number (a GPU host and a guest with several vGPUs must agree).
#include "portable.cuh"

int main(void)
{
    int *flag = nullptr;
    CHECK_CUDA(cudaHostAlloc((void **)&flag, sizeof(int), cudaHostAllocPortable | cudaHostAllocMapped));
    raise_on_every_device(flag, true);
    printf("every device raised the flag in turn, its stream and events done\n");
    CHECK_CUDA(cudaFreeHost(flag));
    printf("PASS\n");
    return 0;
}
