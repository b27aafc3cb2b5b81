// The subjects' device operands: copies of a and b and room for a result of
// the same size, all three allocated before the two copies (the runtime calls
// vecadd and cublas made inline, in their order).
#pragma once
#include <vector>

#include <cuda_runtime.h>

#include "check.h"

static inline void upload_operands(const std::vector<float> &a, const std::vector<float> &b, float **da,
                                   float **db, float **dc) {
    const size_t bytes = a.size() * sizeof(float);
    CK(cudaMalloc(da, bytes));
    CK(cudaMalloc(db, bytes));
    CK(cudaMalloc(dc, bytes));
    CK(cudaMemcpy(*da, a.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(*db, b.data(), bytes, cudaMemcpyHostToDevice));
}
