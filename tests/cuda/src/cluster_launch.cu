// Thread-block clusters (Hopper): cudaLaunchKernelEx with a cluster
// dimension attribute, distributed shared memory (each block reads its
// peers' shared memory through the cluster) and cluster.sync(), the
// cluster occupancy query, and a graph's kernel node given its cluster
// shape by cudaGraphKernelNodeSetAttribute. On a device without clusters it
// says so and passes (the outputs then still compare with native).
#include <cooperative_groups.h>
#include <vector>
#include "check.cuh"

namespace cg = cooperative_groups;

#define BLOCK 128

// Each block puts its values in shared memory; after cluster.sync() every
// thread adds the same slot of every block of its cluster.
__global__ void cluster_sum(const int *in, int *out)
{
    cg::cluster_group cluster = cg::this_cluster();
    __shared__ int mine[BLOCK];
    int gid = blockIdx.x * BLOCK + threadIdx.x;

    mine[threadIdx.x] = in[gid];
    cluster.sync();
    int sum = 0;
    for (unsigned r = 0; r < cluster.num_blocks(); r++)
        sum += cluster.map_shared_rank(mine, r)[threadIdx.x];
    out[gid] = sum * 1000 + (int)cluster.block_rank();
    cluster.sync();     // peers' shared memory stays valid until all have read it
}

// every thread's sum over its cluster's blocks, and its block's rank
static void check_sums(const std::vector<int> &host, const std::vector<int> &got, unsigned csize, int blocks,
                       const char *how)
{
    for (int b = 0; b < blocks; b++) {
        for (int t = 0; t < BLOCK; t++) {
            int first = (int)(b / csize * csize), sum = 0;
            for (unsigned r = 0; r < csize; r++)
                sum += host[(first + (int)r) * BLOCK + t];
            int want = sum * 1000 + b % (int)csize;
            REQUIRE(got[b * BLOCK + t] == want, "%s, cluster %u block %d thread %d: %d, expected %d", how, csize,
                    b, t, got[b * BLOCK + t], want);
        }
    }
}

// the same kernel as a graph's kernel node whose cluster shape is its attribute
static void graph_node(const int *din, int *dout, unsigned csize, int blocks)
{
    cudaGraph_t g;
    cudaGraphExec_t x;
    cudaGraphNode_t node;
    void *args[] = { &din, &dout };
    cudaKernelNodeParams k = {};
    k.func = (void *)cluster_sum;
    k.gridDim = dim3(blocks);
    k.blockDim = dim3(BLOCK);
    k.kernelParams = args;
    CHECK_CUDA(cudaGraphCreate(&g, 0));
    CHECK_CUDA(cudaGraphAddKernelNode(&node, g, nullptr, 0, &k));
    cudaLaunchAttributeValue v = {}, back = {};
    v.clusterDim.x = csize;
    v.clusterDim.y = 1;
    v.clusterDim.z = 1;
    CHECK_CUDA(cudaGraphKernelNodeSetAttribute(node, cudaLaunchAttributeClusterDimension, &v));
    CHECK_CUDA(cudaGraphKernelNodeGetAttribute(node, cudaLaunchAttributeClusterDimension, &back));
    std::printf("graph kernel node: cluster attribute reads %u x %u x %u\n", back.clusterDim.x, back.clusterDim.y,
                back.clusterDim.z);
    CHECK_CUDA(cudaGraphInstantiate(&x, g, 0));
    CHECK_CUDA(cudaGraphLaunch(x, 0));
    CHECK_CUDA(cudaStreamSynchronize(0));
    CHECK_CUDA(cudaGraphExecDestroy(x));
    CHECK_CUDA(cudaGraphDestroy(g));
}

int main()
{
    int dev = 0, has = 0;
    CHECK_CUDA(cudaSetDevice(dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&has, cudaDevAttrClusterLaunch, dev));
    std::printf("cluster launch supported: %s\n", has ? "yes" : "no");
    if (!has)
        return pass();

    for (unsigned csize : {2u, 4u}) {
        const int blocks = 64;
        const int n = blocks * BLOCK;
        std::vector<int> host(n), got(n);
        unsigned state = 7 + csize;
        for (int i = 0; i < n; i++)
            host[i] = (int)(lcg_next(&state) % 100);
        int *din, *dout;
        CHECK_CUDA(cudaMalloc(&din, n * sizeof(int)));
        CHECK_CUDA(cudaMalloc(&dout, n * sizeof(int)));
        CHECK_CUDA(cudaMemcpy(din, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));

        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = csize;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.gridDim = dim3(blocks);
        cfg.blockDim = dim3(BLOCK);
        cfg.attrs = attr;
        cfg.numAttrs = 1;

        int resident = 0;
        CHECK_CUDA(cudaOccupancyMaxActiveClusters(&resident, (void *)cluster_sum, &cfg));
        std::printf("clusters of %u: some resident at once: %s\n", csize, resident > 0 ? "yes" : "no");
        REQUIRE(resident > 0, "no cluster of %u blocks fits", csize);

        CHECK_CUDA(cudaLaunchKernelEx(&cfg, cluster_sum, (const int *)din, dout));
        CHECK_LAUNCH();
        CHECK_CUDA(cudaMemcpy(got.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
        check_sums(host, got, csize, blocks, "cudaLaunchKernelEx");
        std::printf("clusters of %u: %d blocks summed their peers' shared memory\n", csize, blocks);

        CHECK_CUDA(cudaMemset(dout, 0, n * sizeof(int)));
        graph_node(din, dout, csize, blocks);
        CHECK_CUDA(cudaMemcpy(got.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
        check_sums(host, got, csize, blocks, "graph kernel node");
        std::printf("clusters of %u as a graph node's attribute: the same sums\n", csize);
        FREE_DEVICE(din, dout);
    }

    // a cluster that does not divide the grid is the driver's error, as natively
    cudaLaunchConfig_t bad = {};
    cudaLaunchAttribute battr[1];
    battr[0].id = cudaLaunchAttributeClusterDimension;
    battr[0].val.clusterDim.x = 3;
    battr[0].val.clusterDim.y = 1;
    battr[0].val.clusterDim.z = 1;
    bad.gridDim = dim3(64);
    bad.blockDim = dim3(BLOCK);
    bad.attrs = battr;
    bad.numAttrs = 1;
    int *dummy;
    CHECK_CUDA(cudaMalloc(&dummy, 64 * BLOCK * sizeof(int)));
    cudaError_t e = cudaLaunchKernelEx(&bad, cluster_sum, (const int *)dummy, dummy);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    std::printf("cluster of 3 over 64 blocks: %s\n", cudaGetErrorName(e));
    cudaGetLastError();
    return pass();
}
