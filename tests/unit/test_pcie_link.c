// SPDX-License-Identifier: MIT
/* host-backend/device/pcie_link.c: the PCIe figures mearasd publishes for
 * NVML (mearas_devinfo.pcie), read from a sysfs tree made here the way the
 * kernel lays it out: bus/pci/devices/ADDR a link into devices/, the GPU's
 * directory under its upstream port's. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "device/pcie_link.h"

static char root[64];

static void put(const char *dir, const char *name, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	REQUIRE(f);
	fputs(text, f);
	fclose(f);
}

static void mkdirs(const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

/* a GPU at 0000:17:00.0 under the port 0000:16:01.0; returns the two directories */
static void make_tree(char *gpu, char *port, size_t len)
{
	char links[PATH_MAX + 32], l[PATH_MAX + 64];

	snprintf(root, sizeof(root), "/tmp/mearas-pcie.%d.XXXXXX", (int)getpid());
	REQUIRE(mkdtemp(root));
	snprintf(port, len, "%s/devices/pci0000:16/0000:16:01.0", root);
	snprintf(gpu, len, "%s/0000:17:00.0", port);
	mkdirs(gpu);
	snprintf(links, sizeof(links), "%s/bus/pci/devices", root);
	mkdirs(links);
	snprintf(l, sizeof(l), "%s/0000:17:00.0", links);
	REQUIRE(symlink(gpu, l) == 0);
}

static void remove_tree(void)
{
	char cmd[PATH_MAX + 16];

	if (!root[0] || strncmp(root, "/tmp/mearas-pcie.", 17))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	root[0] = 0;
}

static void teardown(void)
{
	remove_tree();
}

struct speed_case {
	const char *text;   /* sysfs current/max_link_speed */
	unsigned gen;       /* the generation it names, 0: unknown */
};

static void check_speeds(const struct speed_case *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		CHECK_MSG(pcie_gen_of_speed(t[i].text) == t[i].gen, "\"%s\": Gen%u, want Gen%u", t[i].text,
			  pcie_gen_of_speed(t[i].text), t[i].gen);
}

static void speeds_to_generations(void)
{
	static const struct speed_case known[] = {
		{ "2.5 GT/s PCIe", 1 }, { "5.0 GT/s PCIe", 2 }, { "8.0 GT/s PCIe", 3 },
		{ "16.0 GT/s PCIe", 4 }, { "32.0 GT/s PCIe", 5 }, { "64.0 GT/s PCIe", 6 },
		{ "16.0 GT/s", 4 }, /* older kernels write no " PCIe" */
	};

	check_speeds(known, sizeof(known) / sizeof(known[0]));
}

static void unknown_speeds_are_zero(void)
{
	static const struct speed_case unknown[] = {
		{ "Unknown", 0 }, { "Unknown speed", 0 }, { "12.0 GT/s PCIe", 0 }, { "", 0 }, { "16.0", 0 },
	};

	check_speeds(unknown, sizeof(unknown) / sizeof(unknown[0]));
}

/* all five figures of link l (at the caller's line when one differs) */
#define CHECK_LINK(l, cur_gen_, gpu_max_gen_, max_gen_, cur_width_, max_width_) \
	do {                                                                     \
		CHECK_EQ((l).cur_gen, cur_gen_);                                 \
		CHECK_EQ((l).gpu_max_gen, gpu_max_gen_);                         \
		CHECK_EQ((l).max_gen, max_gen_);                                 \
		CHECK_EQ((l).cur_width, cur_width_);                             \
		CHECK_EQ((l).max_width, max_width_);                             \
	} while (0)

/* a Gen5 x16 GPU running at Gen4 x8 behind a port whose maxima are given;
 * reads the link into *l */
static void read_gen5_gpu_behind(const char *port_speed, const char *port_width,
				 struct mearas_pcie_link *l)
{
	char gpu[PATH_MAX], port[PATH_MAX];

	make_tree(gpu, port, sizeof(gpu));
	put(gpu, "current_link_speed", "16.0 GT/s PCIe\n");
	put(gpu, "max_link_speed", "32.0 GT/s PCIe\n");
	put(gpu, "current_link_width", "8\n");
	put(gpu, "max_link_width", "16\n");
	put(port, "max_link_speed", port_speed);
	put(port, "max_link_width", port_width);
	pcie_link_read(root, 0, 0x17, 0, l);
}

/* the GPU's figures; the port allows more: the GPU's maxima stand */
static void reads_the_gpus_link(void)
{
	struct mearas_pcie_link l;

	read_gen5_gpu_behind("64.0 GT/s PCIe\n", "32\n", &l);
	CHECK_LINK(l, 4, 5, 5, 8, 16);
}

/* a Gen5 GPU behind a Gen4 x8 port: the link allows Gen4 x8 at most */
static void port_limits_the_maximum(void)
{
	struct mearas_pcie_link l;

	read_gen5_gpu_behind("16.0 GT/s PCIe\n", "8\n", &l);
	CHECK_LINK(l, 4, 5, 4, 8, 8);
}

/* files missing or unreadable, a GPU not in sysfs: zeros (unknown) */
static void missing_figures_are_zero(void)
{
	char gpu[PATH_MAX], port[PATH_MAX];
	struct mearas_pcie_link l;

	make_tree(gpu, port, sizeof(gpu));
	put(gpu, "current_link_speed", "Unknown\n");
	put(gpu, "current_link_width", "0\n");
	put(gpu, "max_link_width", "x16\n");
	memset(&l, 0x55, sizeof(l));
	pcie_link_read(root, 0, 0x17, 0, &l);
	CHECK_LINK(l, 0, 0, 0, 0, 0);
	memset(&l, 0x55, sizeof(l));
	pcie_link_read(root, 0, 0x42, 0, &l);
	CHECK_EQ(l.cur_gen, 0);
	CHECK_EQ(l.max_width, 0);
}

static const struct check_case cases[] = {
	{ "speeds_to_generations", speeds_to_generations },
	{ "unknown_speeds_are_zero", unknown_speeds_are_zero },
	{ "reads_the_gpus_link", reads_the_gpus_link },
	{ "port_limits_the_maximum", port_limits_the_maximum },
	{ "missing_figures_are_zero", missing_figures_are_zero },
};
CHECK_MAIN_FIXTURE(cases, NULL, teardown)
