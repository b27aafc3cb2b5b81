// SPDX-License-Identifier: MIT
/* host-backend/device/kmd_version.c: the NVIDIA kernel driver's version
 * that mearasd publishes for nvmlSystemGetDriverVersion
 * (mearas_devinfo.kmd_version), from /proc/driver/nvidia/version's text. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "device/kmd_version.h"

static void proprietary_module(void)
{
	char v[32] = "";

	CHECK(kmd_version_parse("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct  2 2025\n"
				"GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n", v, sizeof(v)));
	CHECK_STR_EQ(v, "580.159.04");
}

static void open_module(void)
{
	char v[32] = "";

	CHECK(kmd_version_parse("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
				"(dvs-builder@U16-I2-C04-35-2)  Tue Sep 23 09:45:22 UTC 2025\n", v, sizeof(v)));
	CHECK_STR_EQ(v, "580.95.05");
}

static void no_version_is_refused(void)
{
	char v[32] = "unchanged";

	CHECK(!kmd_version_parse("NVRM version: NVIDIA UNIX x86_64 Kernel Module\nGCC version: 12.2.0\n", v,
				 sizeof(v)));
	CHECK(!kmd_version_parse("", v, sizeof(v)));
	CHECK(!kmd_version_parse("GCC version:  gcc version 12.2.0\n", v, sizeof(v)));
	CHECK_STR_EQ(v, "unchanged");
}

static void too_long_is_refused(void)
{
	char v[8] = "";

	CHECK(!kmd_version_parse("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  x\n", v, sizeof(v)));
}

static void missing_file_is_refused(void)
{
	char v[32] = "";

	CHECK(!kmd_version_read("/nonexistent/driver/nvidia/version", v, sizeof(v)));
}

static const struct check_case cases[] = {
	{ "proprietary_module", proprietary_module },
	{ "open_module", open_module },
	{ "no_version_is_refused", no_version_is_refused },
	{ "too_long_is_refused", too_long_is_refused },
	{ "missing_file_is_refused", missing_file_is_refused },
};
CHECK_MAIN(cases)
