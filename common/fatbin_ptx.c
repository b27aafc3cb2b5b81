/* SPDX-License-Identifier: MIT */
/*
 * Kernel parameter layouts from PTX text: for every ".entry name ( .param
 * [.align A] .type [.ptr .space .align P] pname[N], ... )" the parameters are
 * laid out in order, each at the next multiple of its alignment (.align A when
 * given before the type, else the type's size; the .align after .ptr is the
 * pointee's and does not matter here).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fatbin_internal.h"

struct lexer {
	const char *p, *end;
	const char *tok;	/* current token */
	size_t len;
};

static int is_word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' || c == '%';
}

/* Advance to the next token; returns 0 at end of text. */
static int next(struct lexer *lx)
{
	const char *p = lx->p, *end = lx->end;
	for (;;) {
		while (p < end && isspace((unsigned char)*p))
			p++;
		if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
			while (p < end && *p != '\n')
				p++;
			continue;
		}
		if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
			p += 2;
			while (end - p >= 2 && !(p[0] == '*' && p[1] == '/'))
				p++;
			p = end - p >= 2 ? p + 2 : end;
			continue;
		}
		break;
	}
	if (p >= end) {
		lx->p = end;
		lx->tok = end;
		lx->len = 0;
		return 0;
	}
	const char *start = p;
	if (*p == '"') {
		p++;
		while (p < end && *p != '"' && *p != '\n')
			p++;
		if (p < end && *p == '"')
			p++;
	} else if (is_word_char(*p)) {
		while (p < end && is_word_char(*p))
			p++;
	} else {
		p++;
	}
	lx->tok = start;
	lx->len = (size_t)(p - start);
	lx->p = p;
	return 1;
}

static int is(const struct lexer *lx, const char *s)
{
	return lx->len == strlen(s) && memcmp(lx->tok, s, lx->len) == 0;
}

/* Size in bytes of a PTX scalar type token, 0 if it is not one. */
static uint32_t type_size(const struct lexer *lx)
{
	static const struct { const char *name; uint32_t size; } types[] = {
		{ ".b8", 1 },	 { ".u8", 1 },	 { ".s8", 1 },	 { ".b16", 2 },
		{ ".u16", 2 },	 { ".s16", 2 },	 { ".f16", 2 },	 { ".bf16", 2 },
		{ ".b32", 4 },	 { ".u32", 4 },	 { ".s32", 4 },	 { ".f32", 4 },
		{ ".f16x2", 4 }, { ".bf16x2", 4 }, { ".b64", 8 }, { ".u64", 8 },
		{ ".s64", 8 },	 { ".f64", 8 },	 { ".b128", 16 },
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (is(lx, types[i].name))
			return types[i].size;
	return 0;
}

/* Decimal (or 0x hex) number token, within [1, max]; 0 if not. */
static uint64_t number(const struct lexer *lx, uint64_t max)
{
	char buf[24];
	if (lx->len == 0 || lx->len >= sizeof(buf) || !isdigit((unsigned char)lx->tok[0]))
		return 0;
	memcpy(buf, lx->tok, lx->len);
	buf[lx->len] = '\0';
	char *endp;
	unsigned long long v = strtoull(buf, &endp, 0);
	if (*endp || v > max)
		return 0;
	return v;
}

/* One ".param ..." declaration; the lexer is on ".param". */
static int parse_param(struct lexer *lx, uint64_t *cursor, struct mearas_kparam *out,
		       char *err, size_t errlen)
{
	uint64_t align = 0, elem = 0, vec = 1, count = 1;
	int seen_ptr = 0;
	for (;;) {
		if (!next(lx)) {
			fb_seterr(err, errlen, "unterminated parameter");
			return -EINVAL;
		}
		if (is(lx, ".align")) {
			if (!next(lx)) {
				fb_seterr(err, errlen, "missing .align value");
				return -EINVAL;
			}
			uint64_t a = number(lx, 1u << 16);
			if (!a || (a & (a - 1))) {
				fb_seterr(err, errlen, "bad .align %.*s", (int)lx->len, lx->tok);
				return -EINVAL;
			}
			if (!seen_ptr && !elem)
				align = a;
		} else if (is(lx, ".ptr")) {
			seen_ptr = 1;
		} else if (is(lx, ".v2") || is(lx, ".v4")) {
			vec = lx->tok[2] - '0';
		} else if (type_size(lx)) {
			elem = type_size(lx);
		} else if (lx->tok[0] == '.') {
			continue;	/* state space of a .ptr, or another qualifier */
		} else {
			break;		/* the parameter's name */
		}
	}
	if (!elem || !is_word_char(lx->tok[0])) {
		fb_seterr(err, errlen, "parameter %.*s without a type", (int)lx->len, lx->tok);
		return -EINVAL;
	}
	const char *save = lx->p;
	while (next(lx) && is(lx, "[")) {
		uint64_t n = next(lx) ? number(lx, FB_MAX_PARAM_BYTES) : 0;
		if (!n || !next(lx) || !is(lx, "]") || count * n > FB_MAX_PARAM_BYTES) {
			fb_seterr(err, errlen, "bad array size");
			return -EINVAL;
		}
		count *= n;
		save = lx->p;
	}
	lx->p = save;	/* unread the token after the declaration */
	uint64_t size = elem * vec * count;
	if (!align)
		align = elem * vec;
	uint64_t off = (*cursor + align - 1) & ~(align - 1);
	if (off + size > FB_MAX_PARAM_BYTES) {
		fb_seterr(err, errlen, "parameters exceed %u bytes", FB_MAX_PARAM_BYTES);
		return -EINVAL;
	}
	*out = (struct mearas_kparam){ .offset = (uint32_t)off, .size = (uint32_t)size };
	*cursor = off + size;
	return 0;
}

/* The lexer is on ".entry". */
static int parse_entry(struct lexer *lx, struct fb_builder *b, char *err, size_t errlen)
{
	if (!next(lx) || !is_word_char(lx->tok[0]) || lx->tok[0] == '.') {
		fb_seterr(err, errlen, ".entry without a name");
		return -EINVAL;
	}
	const char *name = lx->tok;
	size_t namelen = lx->len;
	const char *save = lx->p;
	struct mearas_kparam *params = NULL;
	uint32_t n = 0, cap = 0;
	uint64_t cursor = 0;
	int rc = 0;

	if (!next(lx) || !is(lx, "(")) {
		lx->p = save;	/* no parameter list */
		return fb_builder_add(b, name, namelen, NULL, 0);
	}
	for (;;) {
		if (!next(lx)) {
			fb_seterr(err, errlen, "%.*s: unterminated parameter list", (int)namelen,
				  name);
			rc = -EINVAL;
			break;
		}
		if (is(lx, ")"))
			break;
		if (n > 0) {
			if (!is(lx, ",") || !next(lx)) {
				fb_seterr(err, errlen, "%.*s: expected ',' between parameters",
					  (int)namelen, name);
				rc = -EINVAL;
				break;
			}
		}
		if (!is(lx, ".param")) {
			fb_seterr(err, errlen, "%.*s: expected .param, got '%.*s'", (int)namelen,
				  name, (int)(lx->len > 40 ? 40 : lx->len), lx->tok);
			rc = -EINVAL;
			break;
		}
		if (n == cap) {
			if (cap >= FB_MAX_PARAMS) {
				fb_seterr(err, errlen, "%.*s: too many parameters", (int)namelen,
					  name);
				rc = -EINVAL;
				break;
			}
			cap = cap ? cap * 2 : 8;
			struct mearas_kparam *np = realloc(params, cap * sizeof(*np));
			if (!np) {
				fb_seterr(err, errlen, "out of memory");
				rc = -ENOMEM;
				break;
			}
			params = np;
		}
		char why[96];
		rc = parse_param(lx, &cursor, &params[n], why, sizeof(why));
		if (rc) {
			fb_seterr(err, errlen, "%.*s param %u: %s", (int)namelen, name, n, why);
			break;
		}
		n++;
	}
	if (rc) {
		free(params);
		return rc;
	}
	rc = fb_builder_add(b, name, namelen, params, n);
	if (rc)
		fb_seterr(err, errlen, "out of memory");
	return rc;
}

int fb_parse_ptx(const char *text, size_t size, struct fb_builder *b, char *err,
		 size_t errlen)
{
	const char *nul = memchr(text, 0, size);
	struct lexer lx = { .p = text, .end = nul ? nul : text + size };
	int found_version = 0;
	while (next(&lx)) {
		if (is(&lx, ".version"))
			found_version = 1;
		if (is(&lx, ".entry")) {
			int rc = parse_entry(&lx, b, err, errlen);
			if (rc)
				return rc;
		}
	}
	if (!found_version) {
		fb_seterr(err, errlen, "PTX text without a .version directive");
		return -EINVAL;
	}
	return 0;
}

/* ---- the variables PTX text defines in global and constant memory ---- */

/* An array dimension: a decimal or 0x number, saturating; 0 if the token is
 * not a number. */
static uint64_t dimension(const struct lexer *lx)
{
	uint64_t v = 0;
	size_t i = 0;
	int base = 10;

	if (lx->len > 2 && lx->tok[0] == '0' && (lx->tok[1] == 'x' || lx->tok[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i >= lx->len)
		return 0;
	for (; i < lx->len; i++) {
		char c = lx->tok[i];
		int d = isdigit((unsigned char)c) ? c - '0' : base == 16 && isxdigit((unsigned char)c) ?
			(tolower((unsigned char)c) - 'a' + 10) : -1;

		if (d < 0)
			return 0;
		v = fb_add_sat(fb_mul_sat(v, (uint64_t)base), (uint64_t)d);
	}
	return v;
}

/* Skips an initializer (the lexer is on '='); stops on the ',' or ';' that
 * ends it, which it leaves current. *items: its elements at the outermost
 * brace level (what an unsized dimension takes). */
static int skip_initializer(struct lexer *lx, uint64_t *items, char *err, size_t errlen)
{
	unsigned depth = 0;
	uint64_t n = 0;
	int any = 0;

	while (next(lx)) {
		if (is(lx, "{")) {
			depth++;
		} else if (is(lx, "}")) {
			if (!depth--) {
				break;
			}
		} else if (depth == 0 && (is(lx, ",") || is(lx, ";"))) {
			*items = any ? n + 1 : 0;
			return 0;
		} else if (depth == 1 && is(lx, ",")) {
			n++;
		} else if (depth == 1) {
			any = 1;
		}
		if (depth == 2 && is(lx, "{"))
			any = 1; /* a nested row counts as one element */
	}
	fb_seterr(err, errlen, "unterminated initializer");
	return -EINVAL;
}

/* One ".global" or ".const" declaration, the lexer on that token: adds the
 * bytes of every variable it declares to *bytes (saturating). */
static int variable_bytes(struct lexer *lx, uint64_t *bytes, char *err, size_t errlen)
{
	uint64_t elem = 0, vec = 1;

	for (;;) {
		if (!next(lx)) {
			fb_seterr(err, errlen, "unterminated variable declaration");
			return -EINVAL;
		}
		if (is(lx, ".align")) {
			if (!next(lx) || !dimension(lx)) {
				fb_seterr(err, errlen, "bad .align in a variable declaration");
				return -EINVAL;
			}
		} else if (is(lx, ".attribute")) {
			/* .attribute(.managed), .attribute(.unified(a, b)): its
			 * parenthesis, nested ones within */
			unsigned open = 1;

			if (!next(lx) || !is(lx, "(")) {
				fb_seterr(err, errlen, ".attribute without its list");
				return -EINVAL;
			}
			while (open && next(lx))
				open += is(lx, "(") ? 1u : is(lx, ")") ? -1u : 0u;
		} else if (is(lx, ".v2") || is(lx, ".v4") || is(lx, ".v8")) {
			vec = (uint64_t)(lx->tok[2] - '0');
		} else if (type_size(lx)) {
			elem = type_size(lx);
		} else if (lx->tok[0] == '.') {
			continue; /* .texref and the other opaque types, qualifiers */
		} else {
			break; /* the first variable's name */
		}
	}
	if (!elem)
		elem = 8; /* an opaque handle (.texref, .samplerref, .surfref) */
	for (;;) {
		uint64_t count = 1;
		int unsized = 0;

		if (!is_word_char(lx->tok[0]) || lx->tok[0] == '.') {
			fb_seterr(err, errlen, "variable without a name ('%.*s')", (int)(lx->len > 40 ? 40 : lx->len),
				  lx->tok);
			return -EINVAL;
		}
		while (next(lx) && is(lx, "[")) {
			if (!next(lx))
				break;
			if (is(lx, "]")) {
				unsized = 1;
				continue;
			}
			uint64_t n = dimension(lx);

			if (!n || !next(lx) || !is(lx, "]")) {
				fb_seterr(err, errlen, "bad array size in a variable declaration");
				return -EINVAL;
			}
			count = fb_mul_sat(count, n);
		}
		if (is(lx, "=")) {
			uint64_t items = 0;
			int rc = skip_initializer(lx, &items, err, errlen);

			if (rc)
				return rc;
			if (unsized)
				count = fb_mul_sat(count, items);
		} else if (unsized) {
			count = 0; /* no storage of its own without an initializer */
		}
		uint64_t v = fb_mul_sat(fb_mul_sat(elem, vec), count);

		*bytes = fb_add_sat(*bytes, v);
		if (is(lx, ";"))
			return 0;
		if (!is(lx, ",") || !next(lx)) {
			fb_seterr(err, errlen, "expected ',' or ';' after a variable");
			return -EINVAL;
		}
	}
}

int fb_ptx_footprint(const char *text, size_t size, uint64_t *bytes, char *err, size_t errlen)
{
	const char *nul = memchr(text, 0, size);
	struct lexer lx = { .p = text, .end = nul ? nul : text + size };
	unsigned parens = 0;
	int external = 0;

	*bytes = 0;
	while (next(&lx)) {
		if (is(&lx, "("))
			parens++;
		else if (is(&lx, ")") && parens)
			parens--;
		else if (is(&lx, ";") || is(&lx, "{") || is(&lx, "}"))
			external = 0;
		else if (is(&lx, ".extern"))
			external = 1;
		/* declarations at module or function scope; in a parameter list
		 * .global names the space a pointer points into */
		else if (!parens && !external && (is(&lx, ".global") || is(&lx, ".const"))) {
			int rc = variable_bytes(&lx, bytes, err, errlen);

			if (rc)
				return rc;
		}
	}
	return 0;
}
