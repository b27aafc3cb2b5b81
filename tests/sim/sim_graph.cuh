// What the sim's graph programs share: the sim's modelled kernel
// mearas_sim_add_u32 (adds v to n words of mapped host memory), a host
// function counting its runs, and a byte repeated in a word.
#pragma once

#include "sim_check.cuh"

extern "C" __global__ void mearas_sim_add_u32(unsigned *p, unsigned n, unsigned v)
{
    for (unsigned i = 0; i < n; i++)
        p[i] += v;
}

static volatile int host_runs;

static void CUDART_CB host_fn(void *arg)
{
    host_runs = host_runs + *(int *)arg;
}

static inline unsigned bytes4(unsigned b)
{
    return b * 0x01010101u;
}
