/* SPDX-License-Identifier: MIT */
/*
 * The PCIe link of a GPU, from the node's sysfs: what mearasd publishes in
 * each vGPU's devinfo (mearas_devinfo.pcie) for NVML's link queries
 * (nvmlDeviceGetCurrPcieLinkGeneration and the rest, guest/libnvml/pcie.c).
 */
#ifndef MEARAS_PCIE_LINK_H
#define MEARAS_PCIE_LINK_H

#include "mearas/region.h"

/* Fills *out from ROOT/bus/pci/devices/DDDD:BB:DD.0 (ROOT is "/sys" but in
 * tests): current_link_speed/width give the current figures,
 * max_link_speed/width the GPU's own maxima, and the most the link allows
 * is the smaller of the GPU's and its upstream port's (the parent directory,
 * when that is a PCI function with the files). A figure that cannot be read
 * or parsed is 0 (unknown); nothing else is touched. */
void pcie_link_read(const char *root, unsigned domain, unsigned bus, unsigned device, struct mearas_pcie_link *out);

/* "16.0 GT/s PCIe" (the " PCIe" is newer kernels') -> 4; 0 for anything
 * that is not one of the generations' rates (2.5, 5, 8, 16, 32, 64 GT/s) */
unsigned pcie_gen_of_speed(const char *s);

#endif
