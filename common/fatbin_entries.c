/* SPDX-License-Identifier: MIT */
/*
 * Fat binary container: header {u32 magic 0xba55ed50, u16 version, u16
 * header size, u64 size of the entries}, then entries, each a header followed
 * by its (padded) payload. Entry header fields used here (byte offsets):
 *   0x00 u16 kind (1 PTX text, 2 ELF cubin; others skipped)
 *   0x04 u32 header size       0x08 u64 payload size (padded)
 *   0x10 u32 compressed size   0x1c u32 arch (sm_XY as XY)
 *   0x28 u64 flags (0x2000 LZ4 block, 0x8000 zstd frame)
 *   0x38 u64 decompressed size (when compressed)
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zstd.h>

#include "fatbin_entries.h"

#define FB_HDR_SIZE 16u
#define FB_ENTRY_MIN_HDR 0x40u
#define FB_KIND_PTX 1u
#define FB_KIND_ELF 2u
#define FB_FLAG_LZ4 0x2000u
#define FB_FLAG_ZSTD 0x8000u
#define FB_MAX_DECOMPRESSED (1ull << 30)
/* a search decompresses less (the daemon's memory): larger entries may print */
#define FB_SCAN_MAX_DECOMPRESSED (64ull << 20)

static const char *kind_name(uint16_t kind)
{
	return kind == FB_KIND_PTX ? "PTX" : kind == FB_KIND_ELF ? "ELF" : "other";
}

static int decompress(const uint8_t *src, size_t csize, uint64_t usize, uint64_t flags,
		      uint8_t **out, char *err, size_t errlen)
{
	if (usize == 0 || usize > FB_MAX_DECOMPRESSED) {
		fb_seterr(err, errlen, "decompressed size %llu out of range",
			  (unsigned long long)usize);
		return -EINVAL;
	}
	if ((flags & FB_FLAG_ZSTD) && (flags & FB_FLAG_LZ4)) {
		fb_seterr(err, errlen, "both LZ4 and zstd compression flags set");
		return -EINVAL;
	}
	if (flags & FB_FLAG_ZSTD) {
		unsigned long long fcs = ZSTD_getFrameContentSize(src, csize);
		if (fcs == ZSTD_CONTENTSIZE_ERROR) {
			fb_seterr(err, errlen, "payload is not a zstd frame");
			return -EINVAL;
		}
		if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != usize) {
			fb_seterr(err, errlen, "zstd frame holds %llu bytes, header says %llu",
				  fcs, (unsigned long long)usize);
			return -EINVAL;
		}
	}
	uint8_t *buf = malloc((size_t)usize);
	if (!buf) {
		fb_seterr(err, errlen, "out of memory decompressing %llu bytes",
			  (unsigned long long)usize);
		return -ENOMEM;
	}
	if (flags & FB_FLAG_ZSTD) {
		size_t r = ZSTD_decompress(buf, (size_t)usize, src, csize);
		if (ZSTD_isError(r) || r != usize) {
			fb_seterr(err, errlen, "zstd: %s",
				  ZSTD_isError(r) ? ZSTD_getErrorName(r) : "short output");
			free(buf);
			return -EINVAL;
		}
	} else {
		if (csize > INT_MAX || usize > INT_MAX) {
			fb_seterr(err, errlen, "LZ4 payload too large");
			free(buf);
			return -EINVAL;
		}
		int r = LZ4_decompress_safe((const char *)src, (char *)buf, (int)csize,
					    (int)usize);
		if (r < 0 || (uint64_t)r != usize) {
			fb_seterr(err, errlen, "LZ4: corrupt block (%d)", r);
			free(buf);
			return -EINVAL;
		}
	}
	*out = buf;
	return 0;
}

static int parse_entry(const uint8_t *e, size_t avail, size_t *consumed, struct fb_builder *b,
		       char *err, size_t errlen)
{
	char why[192];

	if (avail < FB_ENTRY_MIN_HDR) {
		fb_seterr(err, errlen, "entry %u: truncated header (%zu bytes left)", b->entry,
			  avail);
		return -EINVAL;
	}
	uint16_t kind = fb_rd16(e);
	uint32_t hsize = fb_rd32(e + 0x04);
	uint64_t psize = fb_rd64(e + 0x08);
	uint32_t csize = fb_rd32(e + 0x10);
	uint32_t arch = fb_rd32(e + 0x1c);
	uint64_t flags = fb_rd64(e + 0x28);
	uint64_t usize = fb_rd64(e + 0x38);

	if (hsize < FB_ENTRY_MIN_HDR || hsize > avail || psize > avail - hsize) {
		fb_seterr(err, errlen,
			  "entry %u: header size %u / payload size %llu exceed the %zu bytes left",
			  b->entry, hsize, (unsigned long long)psize, avail);
		return -EINVAL;
	}
	*consumed = hsize + (size_t)psize;
	if (kind != FB_KIND_PTX && kind != FB_KIND_ELF)
		return 0;

	const uint8_t *payload = e + hsize;
	size_t plen = (size_t)psize;
	uint8_t *owned = NULL;
	if (b->scan_only && (b->prints || ((flags & (FB_FLAG_LZ4 | FB_FLAG_ZSTD)) &&
					   usize > FB_SCAN_MAX_DECOMPRESSED))) {
		b->prints = 1;
		return 0;
	}
	if (flags & (FB_FLAG_LZ4 | FB_FLAG_ZSTD)) {
		if (csize == 0 || csize > psize) {
			fb_seterr(err, errlen,
				  "entry %u: compressed size %u outside payload of %llu", b->entry,
				  csize, (unsigned long long)psize);
			return -EINVAL;
		}
		int rc = decompress(payload, csize, usize, flags, &owned, why, sizeof(why));
		if (rc) {
			fb_seterr(err, errlen, "entry %u (%s sm_%u): %s", b->entry,
				  kind_name(kind), arch, why);
			return rc;
		}
		payload = owned;
		plen = (size_t)usize;
	}
	if (b->scan_only) {
		b->prints = fb_text_prints(payload, plen);
		free(owned);
		return 0;
	}
	if (b->footprint) {
		uint64_t bytes = 0;
		int rc = kind == FB_KIND_ELF ? fb_cubin_footprint(payload, plen, &bytes, why, sizeof(why)) :
					       fb_ptx_footprint((const char *)payload, plen, &bytes, why, sizeof(why));

		if (rc)
			fb_seterr(err, errlen, "entry %u (%s sm_%u): %s", b->entry, kind_name(kind), arch, why);
		else if (bytes > b->footprint_max)
			b->footprint_max = bytes;
		free(owned);
		return rc;
	}
	b->ptx = kind == FB_KIND_PTX;
	int rc = kind == FB_KIND_ELF ?
			 fb_parse_cubin(payload, plen, b, why, sizeof(why)) :
			 fb_parse_ptx((const char *)payload, plen, b, why, sizeof(why));
	if (rc)
		fb_seterr(err, errlen, "entry %u (%s sm_%u): %s", b->entry, kind_name(kind),
			  arch, why);
	free(owned);
	return rc;
}

/* Leading zero bytes between fat binaries laid end to end are alignment padding. */
static size_t skip_padding(const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n && p[i] == 0)
		i++;
	return i;
}

int fb_parse_fatbins(const uint8_t *data, size_t size, struct fb_builder *b, char *err,
		     size_t errlen)
{
	size_t off = 0;
	unsigned nfat = 0;

	while (off < size) {
		if (nfat > 0) {
			off += skip_padding(data + off, size - off);
			if (off == size)
				break;
		}
		size_t left = size - off;
		const uint8_t *h = data + off;
		if (left < FB_HDR_SIZE) {
			fb_seterr(err, errlen, "fat binary %u at offset %zu: truncated header",
				  nfat, off);
			return -EINVAL;
		}
		if (fb_rd32(h) != MEARAS_FATBIN_MAGIC) {
			fb_seterr(err, errlen, "fat binary %u at offset %zu: bad magic 0x%08x",
				  nfat, off, fb_rd32(h));
			return -EINVAL;
		}
		uint16_t hsize = fb_rd16(h + 6);
		uint64_t body = fb_rd64(h + 8);
		if (hsize < FB_HDR_SIZE || hsize > left || body > left - hsize) {
			fb_seterr(err, errlen,
				  "fat binary %u at offset %zu: header %u + body %llu exceed the %zu bytes given",
				  nfat, off, hsize, (unsigned long long)body, left);
			return -EINVAL;
		}
		const uint8_t *e = h + hsize;
		size_t elen = (size_t)body;
		while (elen > 0) {
			size_t used = 0;
			int rc = parse_entry(e, elen, &used, b, err, errlen);
			if (rc)
				return rc;
			e += used;
			elen -= used;
			b->entry++;
		}
		off += hsize + (size_t)body;
		nfat++;
	}
	if (nfat == 0) {
		fb_seterr(err, errlen, "empty input");
		return -EINVAL;
	}
	return 0;
}
