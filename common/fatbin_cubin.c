/* SPDX-License-Identifier: MIT */
/*
 * Kernel parameter layouts from an ELF64 cubin. Kernels are the function
 * symbols flagged as CUDA entries (st_other bit 0x10); each one's attributes
 * are in the section ".nv.info.<name>" (type SHT_LOPROC, sh_info = index of
 * the kernel's text section). Attribute records: u8 format, u8 attribute,
 * u16 value-or-size; format 4 (EIFMT_SVAL) is followed by that many bytes.
 * Parameter records (payload: u32 index, u16 ordinal, u16 offset, u32 w):
 *   EIATTR_KPARAM_INFO    0x17: size = w >> 18 (14 bits)
 *   EIATTR_KPARAM_INFO_V2 0x45: size = w & 0xffffff (used when a parameter is
 *                               large; the top byte holds flags, e.g. 5 on
 *                               sm_100 pointer parameters)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fatbin_internal.h"

#define SHT_SYMTAB_ 2u
#define SHT_NOBITS_ 8u
#define SHT_CUDA_INFO 0x70000000u
#define STT_OBJECT_ 1u
#define STT_FUNC_ 2u
#define STO_CUDA_ENTRY 0x10u
#define STO_CUDA_MANAGED 0x4u /* a __managed__ variable */
#define EIFMT_SVAL 4u
#define EIATTR_KPARAM_INFO 0x17u
#define EIATTR_KPARAM_INFO_V2 0x45u
#define NV_INFO_PREFIX ".nv.info."

struct elf {
	const uint8_t *d;
	size_t n;
	const uint8_t *sh;	/* section header table */
	uint32_t shnum;
	const uint8_t *shstr;
	size_t shstr_len;
};

static const uint8_t *sec_hdr(const struct elf *e, uint32_t i)
{
	return e->sh + (size_t)i * 64;
}

/* Section contents, or NULL when they lie outside the image. */
static const uint8_t *sec_data(const struct elf *e, uint32_t i, size_t *len)
{
	const uint8_t *s = sec_hdr(e, i);
	uint64_t off = fb_rd64(s + 24), size = fb_rd64(s + 32);
	if (fb_rd32(s + 4) == SHT_NOBITS_ || off > e->n || size > e->n - off)
		return NULL;
	*len = (size_t)size;
	return e->d + off;
}

/* NUL-terminated string at off in a string table, or NULL. */
static const char *str_at(const uint8_t *tab, size_t len, uint32_t off)
{
	if (off >= len || !memchr(tab + off, 0, len - off))
		return NULL;
	return (const char *)tab + off;
}

static int elf_open(struct elf *e, const uint8_t *d, size_t n, char *err, size_t errlen)
{
	static const uint8_t ident[] = { 0x7f, 'E', 'L', 'F', 2, 1 };
	if (n < 64 || memcmp(d, ident, sizeof(ident)) != 0) {
		fb_seterr(err, errlen, "not a little-endian ELF64 image");
		return -EINVAL;
	}
	uint64_t shoff = fb_rd64(d + 0x28);
	uint16_t shentsize = fb_rd16(d + 0x3a);
	uint16_t shnum = fb_rd16(d + 0x3c), shstrndx = fb_rd16(d + 0x3e);
	if (shentsize != 64 || shnum == 0 || shstrndx >= shnum || shoff > n ||
	    (uint64_t)shnum * 64 > n - shoff) {
		fb_seterr(err, errlen, "ELF section table out of bounds or unsupported");
		return -EINVAL;
	}
	e->d = d;
	e->n = n;
	e->sh = d + shoff;
	e->shnum = shnum;
	e->shstr = sec_data(e, shstrndx, &e->shstr_len);
	if (!e->shstr) {
		fb_seterr(err, errlen, "ELF section name table out of bounds");
		return -EINVAL;
	}
	return 0;
}

struct kparam_tmp {
	uint16_t ordinal;
	struct mearas_kparam p;
};

static int cmp_ordinal(const void *a, const void *b)
{
	const struct kparam_tmp *x = a, *y = b;
	return (x->ordinal > y->ordinal) - (x->ordinal < y->ordinal);
}

/* Parse the attribute records of one .nv.info.<kernel> section. */
static int parse_nv_info(const uint8_t *p, size_t len, const char *kname,
			 struct fb_builder *b, char *err, size_t errlen)
{
	size_t max = len / 16 + 1, n = 0;
	struct kparam_tmp *tmp = malloc(max * sizeof(*tmp));
	if (!tmp) {
		fb_seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	size_t i = 0;
	int rc = -EINVAL;
	while (i < len) {
		if (len - i < 4) {
			fb_seterr(err, errlen, "%s: truncated attribute record", kname);
			goto out;
		}
		uint8_t fmt = p[i], attr = p[i + 1];
		uint16_t val = fb_rd16(p + i + 2);
		if (fmt < 1 || fmt > EIFMT_SVAL) {
			fb_seterr(err, errlen, "%s: unknown attribute format %u", kname, fmt);
			goto out;
		}
		i += 4;
		if (fmt != EIFMT_SVAL)
			continue;
		if (val > len - i) {
			fb_seterr(err, errlen, "%s: attribute 0x%02x overruns section", kname,
				  attr);
			goto out;
		}
		const uint8_t *v = p + i;
		i += val;
		if (attr != EIATTR_KPARAM_INFO && attr != EIATTR_KPARAM_INFO_V2)
			continue;
		if (val < 12) {
			fb_seterr(err, errlen, "%s: short parameter record", kname);
			goto out;
		}
		uint32_t w = fb_rd32(v + 8);
		struct kparam_tmp t = {
			.ordinal = fb_rd16(v + 4),
			.p = { .offset = fb_rd16(v + 6),
			       .size = attr == EIATTR_KPARAM_INFO ? w >> 18 : w & 0xffffff },
		};
		if (t.p.size == 0 || t.p.size > FB_MAX_PARAM_BYTES) {
			fb_seterr(err, errlen, "%s: parameter %u has size %u", kname,
				  t.ordinal, t.p.size);
			goto out;
		}
		tmp[n++] = t;	/* n < max: each record takes at least 16 bytes */
	}
	qsort(tmp, n, sizeof(*tmp), cmp_ordinal);
	for (size_t k = 0; k < n; k++) {
		if (tmp[k].ordinal != k) {
			fb_seterr(err, errlen, "%s: parameter ordinals not 0..%zu", kname,
				  n ? n - 1 : 0);
			goto out;
		}
	}
	struct mearas_kparam *params = NULL;
	if (n) {
		params = malloc(n * sizeof(*params));
		if (!params) {
			rc = -ENOMEM;
			fb_seterr(err, errlen, "out of memory");
			goto out;
		}
		for (size_t k = 0; k < n; k++)
			params[k] = tmp[k].p;
	}
	rc = fb_builder_add(b, kname, strlen(kname), params, (uint32_t)n);
	if (rc)
		fb_seterr(err, errlen, "out of memory");
out:
	free(tmp);
	return rc;
}

int fb_parse_cubin(const uint8_t *data, size_t size, struct fb_builder *b, char *err,
		   size_t errlen)
{
	struct elf e;
	int rc = elf_open(&e, data, size, err, errlen);
	if (rc)
		return rc;

	/* info_of[text section] = its .nv.info.<kernel> section, 0 if none. */
	uint32_t *info_of = calloc(e.shnum, sizeof(*info_of));
	if (!info_of) {
		fb_seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	uint32_t symtab = 0;
	for (uint32_t i = 1; i < e.shnum; i++) {
		const uint8_t *s = sec_hdr(&e, i);
		uint32_t type = fb_rd32(s + 4), target = fb_rd32(s + 44);
		const char *nm = str_at(e.shstr, e.shstr_len, fb_rd32(s));
		if (type == SHT_SYMTAB_ && !symtab)
			symtab = i;
		if (type == SHT_CUDA_INFO && nm &&
		    strncmp(nm, NV_INFO_PREFIX, strlen(NV_INFO_PREFIX)) == 0 &&
		    target > 0 && target < e.shnum)
			info_of[target] = i;
	}
	rc = 0;
	if (!symtab)
		goto out;	/* no symbols, no kernels */

	size_t symlen, strlen_;
	const uint8_t *syms = sec_data(&e, symtab, &symlen);
	uint32_t strndx = fb_rd32(sec_hdr(&e, symtab) + 40);
	const uint8_t *strs = strndx < e.shnum ? sec_data(&e, strndx, &strlen_) : NULL;
	if (!syms || !strs) {
		fb_seterr(err, errlen, "symbol table or its strings out of bounds");
		rc = -EINVAL;
		goto out;
	}
	for (size_t off = 0; off + 24 <= symlen && rc == 0; off += 24) {
		const uint8_t *sym = syms + off;
		uint8_t info = sym[4], other = sym[5];
		uint16_t shndx = fb_rd16(sym + 6);
		/* a device variable: a defined object with a name and a size */
		if ((info & 0xf) == STT_OBJECT_ && shndx != 0 && fb_rd64(sym + 16)) {
			const char *vname = str_at(strs, strlen_, fb_rd32(sym));

			if (vname && *vname && fb_builder_add_global(b, vname, strlen(vname), fb_rd64(sym + 16),
								       !!(other & STO_CUDA_MANAGED))) {
				fb_seterr(err, errlen, "out of memory");
				rc = -ENOMEM;
			}
			continue;
		}
		if ((info & 0xf) != STT_FUNC_ || !(other & STO_CUDA_ENTRY))
			continue;
		const char *kname = str_at(strs, strlen_, fb_rd32(sym));
		if (!kname || !*kname) {
			fb_seterr(err, errlen, "kernel symbol with a bad name");
			rc = -EINVAL;
			break;
		}
		uint32_t info_sec = shndx < e.shnum ? info_of[shndx] : 0;
		if (!info_sec) {
			/* A kernel with no attribute section has no parameter records either. */
			rc = fb_builder_add(b, kname, strlen(kname), NULL, 0);
			if (rc)
				fb_seterr(err, errlen, "out of memory");
			continue;
		}
		const char *secname = str_at(e.shstr, e.shstr_len,
					     fb_rd32(sec_hdr(&e, info_sec)));
		if (strcmp(secname + strlen(NV_INFO_PREFIX), kname) != 0) {
			fb_seterr(err, errlen, "kernel %s: attribute section is named %s", kname,
				  secname);
			rc = -EINVAL;
			break;
		}
		size_t ilen;
		const uint8_t *ip = sec_data(&e, info_sec, &ilen);
		if (!ip) {
			fb_seterr(err, errlen, "%s out of bounds", secname);
			rc = -EINVAL;
			break;
		}
		rc = parse_nv_info(ip, ilen, kname, b, err, errlen);
	}
out:
	free(info_of);
	return rc;
}

#define SHF_ALLOC_ 0x2u
#define PT_LOAD_ 1u

/* Shared memory lives per block and local memory per thread, in on-chip or
 * launch-time storage: not memory the module holds while it is loaded. */
static int per_launch_section(const char *name)
{
	return name && (!strncmp(name, ".nv.shared", 10) || !strncmp(name, ".nv.local", 9));
}

int fb_cubin_footprint(const uint8_t *data, size_t size, uint64_t *bytes, char *err, size_t errlen)
{
	struct elf e;
	uint64_t by_sections = 0, by_segments = 0;
	int rc = elf_open(&e, data, size, err, errlen);

	if (rc)
		return rc;
	for (uint32_t i = 1; i < e.shnum; i++) {
		const uint8_t *s = sec_hdr(&e, i);

		if ((fb_rd64(s + 8) & SHF_ALLOC_) && !per_launch_section(str_at(e.shstr, e.shstr_len, fb_rd32(s))))
			by_sections = fb_add_sat(by_sections, fb_rd64(s + 32));
	}
	/* a loader may follow the segments instead: the larger account counts */
	uint64_t phoff = fb_rd64(data + 0x20);
	uint16_t phentsize = fb_rd16(data + 0x36), phnum = fb_rd16(data + 0x38);

	if (phnum) {
		if (phentsize != 56 || phoff > size || (uint64_t)phnum * 56 > size - phoff) {
			fb_seterr(err, errlen, "ELF program headers out of bounds or unsupported");
			return -EINVAL;
		}
		for (uint32_t i = 0; i < phnum; i++) {
			const uint8_t *p = data + phoff + (size_t)i * 56;

			if (fb_rd32(p) == PT_LOAD_)
				by_segments = fb_add_sat(by_segments, fb_rd64(p + 0x28));
		}
	}
	*bytes = by_sections > by_segments ? by_sections : by_segments;
	return 0;
}
