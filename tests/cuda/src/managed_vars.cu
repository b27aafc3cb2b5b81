// __managed__ variables: kernels naming them and the host reading and
// writing them between launches. An initializer the host reads first; a
// counter kernels add to, read after each synchronization; a table the host
// fills and a kernel sums into device memory; a pointer to a variable passed
// to a kernel; a kernel on a created stream writing part of a table while
// the host writes another part; copies from and to a variable by symbol; a
// slow kernel's write seen after a synchronization with a waiting call
// (cudaMalloc) between.
// Output: what the host saw (the same on a GPU and a vGPU).
#include "check.cuh"

__managed__ int start = 42;
__managed__ unsigned counter;
__managed__ unsigned table[1024];
__managed__ double scale = 0.5;

__global__ void bump(unsigned by)
{
    atomicAdd(&counter, by);
}

__global__ void sum_table(unsigned long long *out)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 1024)
        atomicAdd(out, (unsigned long long)(table[i] * scale));
}

__global__ void add_to(unsigned *p, unsigned n, unsigned v)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] += v;
}

__global__ void read_start(int *out)
{
    *out = start;
}

// a kernel that writes after a while: the host's other calls in between
// must not leave it an older value once it synchronizes
__global__ void slow_set(unsigned v)
{
    long long t0 = clock64();
    while (clock64() - t0 < 20000000)
        ;
    counter = v;
}

int main(void)
{
    int *d_start = nullptr;
    unsigned long long *d_sum = nullptr, sum = 0;
    cudaStream_t s;

    printf("start %d scale %.2f\n", start, scale);
    start = 7;
    CHECK_CUDA(cudaMalloc(&d_start, sizeof(int)));
    read_start<<<1, 1>>>(d_start);
    CHECK_CUDA(cudaGetLastError());
    int seen = 0;
    CHECK_CUDA(cudaMemcpy(&seen, d_start, sizeof(seen), cudaMemcpyDeviceToHost));
    printf("the kernel saw start %d\n", seen);

    for (unsigned round = 1; round <= 5; round++) {
        bump<<<4, 64>>>(round);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaDeviceSynchronize());
        printf("round %u: counter %u\n", round, counter);
        counter += 1000; /* the host's write, seen by the next kernel */
    }

    for (unsigned i = 0; i < 1024; i++)
        table[i] = i;
    scale = 2.0;
    CHECK_CUDA(cudaMalloc(&d_sum, sizeof(*d_sum)));
    CHECK_CUDA(cudaMemset(d_sum, 0, sizeof(*d_sum)));
    sum_table<<<4, 256>>>(d_sum);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpy(&sum, d_sum, sizeof(sum), cudaMemcpyDeviceToHost));
    printf("sum of the table doubled: %llu\n", sum);

    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    add_to<<<2, 256, 0, s>>>(table, 512, 100000);
    CHECK_CUDA(cudaGetLastError());
    for (unsigned i = 1000; i < 1024; i++)
        table[i] = 7;
    CHECK_CUDA(cudaStreamSynchronize(s));
    printf("table[0] %u table[511] %u table[512] %u table[1023] %u\n", table[0], table[511], table[512],
           table[1023]);

    unsigned v = 0;
    CHECK_CUDA(cudaMemcpyFromSymbol(&v, counter, sizeof(v)));
    printf("counter by symbol %u\n", v);
    v = 31337;
    CHECK_CUDA(cudaMemcpyToSymbol(counter, &v, sizeof(v)));
    CHECK_CUDA(cudaDeviceSynchronize());
    printf("counter after a copy to it %u\n", counter);
    bump<<<1, 1>>>(1);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    printf("counter after one more %u\n", counter);

    slow_set<<<1, 1>>>(4242);
    CHECK_CUDA(cudaGetLastError());
    int *scratch = nullptr;
    CHECK_CUDA(cudaMalloc(&scratch, 64)); /* a call that waits, the kernel still running */
    CHECK_CUDA(cudaDeviceSynchronize());
    printf("counter after a slow kernel %u\n", counter);
    CHECK_CUDA(cudaFree(scratch));

    CHECK_CUDA(cudaStreamDestroy(s));
    CHECK_CUDA(cudaFree(d_sum));
    CHECK_CUDA(cudaFree(d_start));
    printf("PASS\n");
    return 0;
}
