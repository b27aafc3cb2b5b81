// Subject (d), second file: device code called across translation units.
__device__ int rdc_calls;

__device__ float rdc_scale(float x) {
    atomicAdd(&rdc_calls, 1);
    return 3.0f * x + 1.0f;
}
