// SPDX-License-Identifier: MIT
/*
 * The real driver's cuGetProcAddress answers, as a table: for every base
 * name of NAMES_FILE, every CUDA version at which some driver entry point
 * changed its ABI (VERSIONS_FILE) and the three flag values, which exported
 * function the driver returns (by dladdr), or its status. Also the answers
 * for an unknown name, a version above the driver's, and the empty name.
 * Output: TSV on stdout, one line per (name, version, flags).
 *   proctable REAL_LIBCUDA NAMES_FILE VERSIONS_FILE
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*get_proc_v2_fn)(const char *symbol, void **pfn, int cuda_version, unsigned long long flags,
			      int *symbol_status);
typedef int (*init_fn)(unsigned flags);
typedef int (*version_fn)(int *v);

static char **read_lines(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	char buf[512], **v = NULL;
	size_t cap = 0;

	*n = 0;
	if (!f) {
		perror(path);
		exit(2);
	}
	while (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\r\n")] = 0;
		if (!buf[0])
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				exit(2);
		}
		v[(*n)++] = strdup(buf);
	}
	fclose(f);
	return v;
}

static void ask(get_proc_v2_fn gp, const char *name, int version, unsigned long long flags)
{
	void *fn = NULL;
	int status = -1, rc = gp(name, &fn, version, flags, &status);
	Dl_info di;
	const char *sym = "-";

	if (fn && dladdr(fn, &di) && di.dli_sname)
		sym = di.dli_sname;
	printf("%s\t%d\t%llu\t%d\t%d\t%s\n", name[0] ? name : "(empty)", version, flags, rc, status,
	       fn ? sym : "NULL");
}

int main(int argc, char **argv)
{
	void *h;
	get_proc_v2_fn gp;
	char **names, **versions;
	size_t nn, nv;
	int drv = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: %s REAL_LIBCUDA NAMES_FILE VERSIONS_FILE\n", argv[0]);
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	gp = (get_proc_v2_fn)dlsym(h, "cuGetProcAddress_v2");
	if (!gp || ((init_fn)dlsym(h, "cuInit"))(0) || ((version_fn)dlsym(h, "cuDriverGetVersion"))(&drv)) {
		fprintf(stderr, "cannot initialize the driver\n");
		return 2;
	}
	names = read_lines(argv[2], &nn);
	versions = read_lines(argv[3], &nv);
	printf("# driver %d\n# name\tversion\tflags\trc\tstatus\tsymbol\n", drv);
	for (size_t i = 0; i < nn; i++)
		for (size_t j = 0; j < nv; j++)
			for (unsigned long long fl = 0; fl < 3; fl++)
				ask(gp, names[i], atoi(versions[j]), fl);
	ask(gp, "cuNoSuchFunction", drv, 0);
	ask(gp, "cuMemAlloc", drv + 10, 0);
	ask(gp, "cuMemAlloc", 1000, 0);
	ask(gp, "", 0, 0);
	ask(gp, "cuGetProcAddress", 11080, 0);
	ask(gp, "cuGetProcAddress", 12000, 0);
	return 0;
}
