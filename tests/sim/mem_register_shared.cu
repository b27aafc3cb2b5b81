// cudaHostRegister of shared memory (two MAP_SHARED views of one memfd, as
// NCCL registers its /dev/shm buffers): mearas cannot move shared pages into
// its data area without ending the sharing, so the call is refused with
// cudaErrorNotSupported, and the two views still share their bytes after it.
#include <sys/mman.h>
#include <unistd.h>
#include "sim_check.cuh"

int main(void)
{
    const size_t len = 1 << 20;
    int fd = memfd_create("mearas-test-shared", 0);
    REQUIRE(fd >= 0 && ftruncate(fd, (off_t)len) == 0, "memfd");
    unsigned char *a = (unsigned char *)mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    unsigned char *b = (unsigned char *)mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(a != MAP_FAILED && b != MAP_FAILED, "mmap");
    CHECK_CUDA(cudaFree(0));

    EXPECT_ERR(cudaErrorNotSupported, cudaHostRegister(a + 100, 4096, cudaHostRegisterMapped));
    cudaGetLastError();
    a[200] = 42;
    b[len - 1] = 7;
    REQUIRE(b[200] == 42 && a[len - 1] == 7, "the views no longer share: %u %u", b[200], a[len - 1]);

    // private memory next to it still registers
    void *p = malloc(len);
    REQUIRE(p, "malloc");
    CHECK_CUDA(cudaHostRegister(p, len, 0));
    CHECK_CUDA(cudaHostUnregister(p));
    free(p);
    munmap(a, len);
    munmap(b, len);
    close(fd);
    return pass();
}
