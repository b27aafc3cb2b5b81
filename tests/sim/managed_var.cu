// A __managed__ variable, which mearas does not serve: the kernel that uses
// it runs, and the host's first access to it ends the program with a clear
// error and exit status 1 (run-tests.sh checks both), not a fault on the
// pointer the registration never set. The shared runtime's behaviour only:
// NVIDIA's static runtime sets that pointer itself.
#include <cstdio>

#include "sim_check.cuh"

__managed__ int counter = 5;

__global__ void bump(void)
{
    counter += 1;
}

int main(void)
{
    bump<<<1, 1>>>();
    CHECK_LAUNCH();
    std::printf("counter %d\n", counter); /* the host's access: mearas ends the program here */
    return 0;
}
