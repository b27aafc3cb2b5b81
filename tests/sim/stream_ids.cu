// cudaStreamGetId: each stream has its own id, the same at every ask (cuBLAS
// keeps a workspace per id): created streams, the legacy default stream
// (stream 0's id), and each thread's per-thread default stream; no place for
// the answer is refused.
#include <set>
#include <thread>
#include "sim_check.cuh"

int main(void)
{
    cudaStream_t s[4];
    std::set<unsigned long long> seen;
    for (auto &st : s) {
        unsigned long long a, b;
        CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
        CHECK_CUDA(cudaStreamGetId(st, &a));
        CHECK_CUDA(cudaStreamGetId(st, &b));
        REQUIRE(a == b, "one stream, two ids: %llu, %llu", a, b);
        seen.insert(a);
    }
    unsigned long long zero, legacy, per_thread, again, other_thread = 0;
    CHECK_CUDA(cudaStreamGetId(0, &zero));
    CHECK_CUDA(cudaStreamGetId(cudaStreamLegacy, &legacy));
    CHECK_CUDA(cudaStreamGetId(cudaStreamPerThread, &per_thread));
    CHECK_CUDA(cudaStreamGetId(cudaStreamPerThread, &again));
    REQUIRE(zero == legacy, "stream 0 %llu, the legacy stream %llu", zero, legacy);
    REQUIRE(per_thread == again, "the per-thread stream: %llu, then %llu", per_thread, again);
    std::thread t([&] { CHECK_CUDA(cudaStreamGetId(cudaStreamPerThread, &other_thread)); });
    t.join();
    seen.insert(legacy);
    seen.insert(per_thread);
    seen.insert(other_thread);
    REQUIRE(seen.size() == 7, "ids not all different: %zu distinct of 7", seen.size());

    EXPECT_ERR(cudaErrorInvalidValue, cudaStreamGetId(s[0], nullptr));
    (void)cudaGetLastError();
    for (auto st : s)
        CHECK_CUDA(cudaStreamDestroy(st));
    return pass();
}
