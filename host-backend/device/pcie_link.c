// SPDX-License-Identifier: MIT
/* The PCIe link of a GPU from sysfs (pcie_link.h). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcie_link.h"

unsigned pcie_gen_of_speed(const char *s)
{
	/* the transfer rate of each generation, GT/s */
	static const double rate[] = { 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };
	char *end;
	double v = strtod(s, &end);

	if (end == s || strncmp(end, " GT/s", 5))
		return 0;
	for (unsigned g = 0; g < sizeof(rate) / sizeof(rate[0]); g++)
		if (v > rate[g] - 0.01 && v < rate[g] + 0.01)
			return g + 1;
	return 0;
}

/* the first line of DIR/NAME (bounded), false if it cannot be read */
static bool read_line(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;
	bool ok;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return false;
	f = fopen(path, "r");
	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

static unsigned read_gen(const char *dir, const char *name)
{
	char buf[64];

	return read_line(dir, name, buf, sizeof(buf)) ? pcie_gen_of_speed(buf) : 0;
}

/* a width in lanes: 1..32, else 0 */
static unsigned read_width(const char *dir, const char *name)
{
	char buf[64], *end;
	unsigned long v;

	if (!read_line(dir, name, buf, sizeof(buf)))
		return 0;
	v = strtoul(buf, &end, 10);
	return end != buf && *end == 0 && v >= 1 && v <= 32 ? (unsigned)v : 0;
}

/* the smaller of two figures where both are known, else the GPU's */
static unsigned lesser(unsigned gpu, unsigned port)
{
	return gpu && port && port < gpu ? port : gpu;
}

void pcie_link_read(const char *root, unsigned domain, unsigned bus, unsigned device, struct mearas_pcie_link *out)
{
	char link[PATH_MAX], *dev, *slash;
	unsigned pd, pb, ps, pf;
	char tail;

	memset(out, 0, sizeof(*out));
	if ((size_t)snprintf(link, sizeof(link), "%s/bus/pci/devices/%04x:%02x:%02x.0", root, domain & 0xffff,
			     bus & 0xff, device & 0x1f) >= sizeof(link))
		return;
	dev = realpath(link, NULL);
	if (!dev)
		return;
	out->cur_gen = read_gen(dev, "current_link_speed");
	out->gpu_max_gen = read_gen(dev, "max_link_speed");
	out->cur_width = read_width(dev, "current_link_width");
	out->max_width = read_width(dev, "max_link_width");
	out->max_gen = out->gpu_max_gen;
	/* the port above: .../0000:00:01.0/0000:17:00.0 */
	slash = strrchr(dev, '/');
	if (slash && slash != dev) {
		*slash = 0;
		slash = strrchr(dev, '/');
		if (slash && sscanf(slash + 1, "%x:%x:%x.%x%c", &pd, &pb, &ps, &pf, &tail) == 4) {
			out->max_gen = lesser(out->gpu_max_gen, read_gen(dev, "max_link_speed"));
			out->max_width = lesser(out->max_width, read_width(dev, "max_link_width"));
		}
	}
	free(dev);
}
