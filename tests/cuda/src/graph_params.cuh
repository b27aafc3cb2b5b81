// Graph helpers shared by the GPU-lane and sim programs of the generic node
// calls (tests/cuda/src/graph_generic.cu, tests/sim/graph_generic.cu) and
// the sim's kernel node programs.
#pragma once

#include <cstring>

#include "check.cuh"

// a zeroed cudaGraphNodeParams of a type (the dim3 members of its union
// leave it no default constructor in C++)
struct node_params {
    alignas(cudaGraphNodeParams) unsigned char raw[sizeof(cudaGraphNodeParams)];
    explicit node_params(cudaGraphNodeType t)
    {
        std::memset(raw, 0, sizeof(raw));
        (*this)->type = t;
    }
    cudaGraphNodeParams *operator->() { return reinterpret_cast<cudaGraphNodeParams *>(raw); }
    cudaGraphNodeParams *get() { return reinterpret_cast<cudaGraphNodeParams *>(raw); }
};

// a kernel node's parameters: func's grid and block, its arguments
static inline cudaKernelNodeParams kernel_node(const void *func, dim3 grid, dim3 block, void **args)
{
    cudaKernelNodeParams k = {};
    k.func = const_cast<void *>(func);
    k.gridDim = grid;
    k.blockDim = block;
    k.kernelParams = args;
    return k;
}

static inline node_params memset_node(void *dst, unsigned value, unsigned elem, size_t width)
{
    node_params q(cudaGraphNodeTypeMemset);
    q->memset.dst = dst;
    q->memset.value = value;
    q->memset.elementSize = elem;
    q->memset.width = width;
    q->memset.height = 1;
    return q;
}

// a graph of an alloc node of `bytes` on device 0, a memset of its memory
// and its free node, all by cudaGraphAddNode
static inline cudaGraph_t memory_node_graph(size_t bytes)
{
    cudaGraph_t g;
    cudaGraphNode_t alloc, use, freed;

    CHECK_CUDA(cudaGraphCreate(&g, 0));
    node_params aq(cudaGraphNodeTypeMemAlloc);
    aq->alloc.poolProps.allocType = cudaMemAllocationTypePinned;
    aq->alloc.poolProps.location.type = cudaMemLocationTypeDevice;
    aq->alloc.poolProps.location.id = 0;
    aq->alloc.bytesize = bytes;
    CHECK_CUDA(cudaGraphAddNode(&alloc, g, nullptr, nullptr, 0, aq.get()));
    REQUIRE(aq->alloc.dptr != nullptr, "the alloc node gave no address");
    node_params fill = memset_node(aq->alloc.dptr, 7, 1, bytes);
    CHECK_CUDA(cudaGraphAddNode(&use, g, &alloc, nullptr, 1, fill.get()));
    node_params fq(cudaGraphNodeTypeMemFree);
    fq->free.dptr = aq->alloc.dptr;
    CHECK_CUDA(cudaGraphAddNode(&freed, g, &use, nullptr, 1, fq.get()));
    return g;
}
