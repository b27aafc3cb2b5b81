// SPDX-License-Identifier: MIT
/* The NVIDIA kernel driver's version from procfs (kmd_version.h). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kmd_version.h"

static bool is_version(const char *w, size_t n)
{
	bool dot = false;

	if (!n || w[0] == '.' || w[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (w[i] == '.')
			dot = true;
		else if (w[i] < '0' || w[i] > '9')
			return false;
	}
	return dot;
}

bool kmd_version_parse(const char *text, char *out, size_t len)
{
	const char *p = strstr(text, "NVRM version:"), *end;

	if (!p || !len)
		return false;
	end = strchr(p, '\n');
	if (!end)
		end = p + strlen(p);
	while (p < end) {
		size_t n;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		n = strcspn(p, " \t\n");
		if (p + n > end)
			n = (size_t)(end - p);
		if (is_version(p, n) && n < len) {
			memcpy(out, p, n);
			out[n] = 0;
			return true;
		}
		p += n;
	}
	return false;
}

bool kmd_version_read(const char *path, char *out, size_t len)
{
	char text[1024];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return false;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	return kmd_version_parse(text, out, len);
}
