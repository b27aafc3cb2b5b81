// SPDX-License-Identifier: MIT
/*
 * mearasd's config file: a small strict parser of the TOML subset that
 * config_file.h describes, turning keys into long options. Errors say
 * "mearasd: FILE:LINE: what".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_file.h"

#define MAX_VALUE_BYTES 4096
#define MAX_ARRAY_ITEMS 256

enum vtype { V_STRING, V_INTEGER, V_ARRAY };

struct entry {
	int opt;               /* index in the getopt table */
	unsigned line;
	enum vtype type;
	unsigned nvals;
	char **vals;
};

struct parser {
	const char *path;
	const char *p, *end;
	unsigned line;
	const struct option *opts;
	const char *const *repeatable;
	struct entry *entries;
	unsigned nentries;
	bool failed;
};

/* the file's arguments in the merged argv, and where each came from */
static char **file_args;
static unsigned *file_arg_line, *file_arg_entry, nfile_args;
static struct entry *file_entries;
static const char *file_path;
static const char *current_arg;   /* the argument getopt returned last */
/* what mearasd parses: kept for the life of the process (volatile: the
 * store stays, so leak checkers see it held) */
static char **volatile merged_argv;

/* what getopt returned, for --print-config: per option, its values in order */
struct noted {
	unsigned n;
	char **vals;
	bool *integer;
};
static struct noted *noted;
static unsigned noted_size;

static int fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;

	if (ps->failed)
		return -1;
	ps->failed = true;
	fprintf(stderr, "mearasd: %s:%u: ", ps->path, ps->line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static bool is_bare(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Length of the UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Every byte valid UTF-8; control characters only as tab, LF and CR LF. */
static int check_text(struct parser *ps)
{
	const unsigned char *s = (const unsigned char *)ps->p, *e = (const unsigned char *)ps->end;

	while (s < e) {
		size_t n = utf8_len(s, (size_t)(e - s));

		if (!n)
			return fail(ps, "not valid UTF-8");
		if (*s == '\n')
			ps->line++;
		else if (*s == '\r' && (s + 1 == e || s[1] != '\n'))
			return fail(ps, "a carriage return not followed by a line feed");
		else if ((*s < 0x20 && *s != '\t' && *s != '\r') || *s == 0x7f)
			return fail(ps, "control character 0x%02x", *s);
		s += n;
	}
	ps->line = 1;
	return 0;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
		ps->p++;
}

static bool at_newline(const struct parser *ps)
{
	return ps->p < ps->end && (*ps->p == '\n' || (*ps->p == '\r' && ps->p + 1 < ps->end && ps->p[1] == '\n'));
}

static void eat_newline(struct parser *ps)
{
	ps->p += *ps->p == '\r' ? 2 : 1;
	ps->line++;
}

static void skip_comment(struct parser *ps)
{
	if (ps->p < ps->end && *ps->p == '#')
		while (ps->p < ps->end && !at_newline(ps))
			ps->p++;
}

/* whitespace, comments and newlines (inside an array) */
static void skip_blank(struct parser *ps)
{
	for (;;) {
		skip_ws(ps);
		skip_comment(ps);
		if (!at_newline(ps))
			return;
		eat_newline(ps);
	}
}

struct buf {
	char s[MAX_VALUE_BYTES + 1];
	size_t n;
};

static int put(struct parser *ps, struct buf *b, const char *s, size_t n)
{
	if (b->n + n > MAX_VALUE_BYTES)
		return fail(ps, "a string longer than %u bytes", MAX_VALUE_BYTES);
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = 0;
	return 0;
}

static int put_codepoint(struct parser *ps, struct buf *b, uint32_t cp)
{
	char u[4];
	size_t n;

	if (cp == 0)
		return fail(ps, "\\u0000 (NUL) in a string is not supported");
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return fail(ps, "\\u escape 0x%" PRIx32 " is not a Unicode scalar value", cp);
	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return put(ps, b, u, n);
}

/* "basic" (escapes) or 'literal' string on one line; at the opening quote */
static int parse_string(struct parser *ps, struct buf *b)
{
	char q = *ps->p;

	b->n = 0;
	b->s[0] = 0;
	if (ps->end - ps->p >= 3 && ps->p[1] == q && ps->p[2] == q)
		return fail(ps, "multi-line strings are not supported");
	ps->p++;
	for (;;) {
		const char *s = ps->p;

		if (ps->p >= ps->end || at_newline(ps))
			return fail(ps, "unterminated string");
		if (*s == q) {
			ps->p++;
			return 0;
		}
		if (q == '"' && *s == '\\') {
			static const char esc_in[] = "btnfr\"\\", esc_out[] = "\b\t\n\f\r\"\\";
			const char *e = ps->p + 1 < ps->end ? strchr(esc_in, ps->p[1]) : NULL;
			int digits;
			uint32_t cp = 0;

			if (e && *e) {
				if (put(ps, b, &esc_out[e - esc_in], 1))
					return -1;
				ps->p += 2;
				continue;
			}
			if (ps->p + 1 >= ps->end || (ps->p[1] != 'u' && ps->p[1] != 'U'))
				return fail(ps, "invalid escape in a string (\\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX "
					    "\\UXXXXXXXX)");
			digits = ps->p[1] == 'u' ? 4 : 8;
			if (ps->end - ps->p < 2 + digits)
				return fail(ps, "short \\%c escape", ps->p[1]);
			for (int i = 0; i < digits; i++) {
				char c = ps->p[2 + i];
				int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
					c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

				if (v < 0)
					return fail(ps, "\\%c escape needs %d hex digits", ps->p[1], digits);
				if (cp > 0x10ffff)
					return fail(ps, "\\U escape beyond Unicode");
				cp = cp << 4 | (uint32_t)v;
			}
			if (put_codepoint(ps, b, cp))
				return -1;
			ps->p += 2 + digits;
			continue;
		}
		if (*s == '\t' || (unsigned char)*s >= 0x20) {
			size_t n = utf8_len((const unsigned char *)s, (size_t)(ps->end - s));

			if (put(ps, b, s, n))
				return -1;
			ps->p += n;
			continue;
		}
		return fail(ps, "control character 0x%02x in a string", (unsigned char)*s);
	}
}

/* A decimal integer (sign, digits with single underscores between them);
 * other numbers are refused by name. At its first character. */
static int parse_number(struct parser *ps, struct buf *b)
{
	const char *s = ps->p, *t = s;
	char digits[32];
	size_t nd = 0;
	bool neg = false;
	uint64_t v = 0;

	while (t < ps->end && (is_bare(*t) || *t == '+' || *t == '.' || *t == ':'))
		t++;
	if (t - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b'))
		return fail(ps, "only decimal integers are supported");
	for (const char *c = s; c < t; c++) {
		if (*c == ':' || (c > s + 1 && *c == '-') || *c == 'T' || *c == 't' || *c == 'Z' || *c == 'z')
			return fail(ps, "dates and times are not supported");
		if (*c == '.' || *c == 'e' || *c == 'E')
			return fail(ps, "floats are not supported: integers only");
	}
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (t - s == 3 && (!memcmp(s, "inf", 3) || !memcmp(s, "nan", 3)))
		return fail(ps, "floats are not supported: integers only");
	if (s == t)
		return fail(ps, "invalid value");
	if (*s == '0' && t - s > 1)
		return fail(ps, "leading zeros are not allowed in an integer");
	for (const char *c = s; c < t; c++) {
		if (*c == '_') {
			if (c == s || c + 1 == t || c[1] == '_' || c[-1] == '_')
				return fail(ps, "an underscore in an integer must be between digits");
			continue;
		}
		if (*c < '0' || *c > '9')
			return fail(ps, "invalid integer");
		if (v > (UINT64_MAX - 9) / 10 || nd >= sizeof(digits) - 1)
			return fail(ps, "integer out of range");
		v = v * 10 + (uint64_t)(*c - '0');
		digits[nd++] = *c;
	}
	digits[nd] = 0;
	if (v > (uint64_t)INT64_MAX + (neg ? 1 : 0))
		return fail(ps, "integer out of range (64-bit)");
	b->n = 0;
	if (neg && v != 0 && put(ps, b, "-", 1))
		return -1;
	if (put(ps, b, digits, nd))
		return -1;
	ps->p = t;
	return 0;
}

static char *dup_buf(const struct buf *b)
{
	char *s = malloc(b->n + 1);

	if (s)
		memcpy(s, b->s, b->n + 1);
	return s;
}

static int add_value(struct parser *ps, struct entry *e, const struct buf *b)
{
	char **v = realloc(e->vals, (e->nvals + 1) * sizeof(*v));

	if (!v)
		return fail(ps, "out of memory");
	e->vals = v;
	if (!(v[e->nvals] = dup_buf(b)))
		return fail(ps, "out of memory");
	e->nvals++;
	return 0;
}

static bool is_repeatable(const char *const *rep, const char *name)
{
	for (; rep && *rep; rep++)
		if (!strcmp(*rep, name))
			return true;
	return false;
}

/* a config key: a long option that takes a value, not --config itself */
static int find_key(const struct option *opts, const char *key)
{
	for (int i = 0; opts[i].name; i++)
		if (!strcmp(opts[i].name, key))
			return opts[i].has_arg == required_argument && strcmp(key, "config") ? i : -2;
	return -1;
}

static int parse_value(struct parser *ps, struct entry *e)
{
	static struct buf b;
	const char *name = ps->opts[e->opt].name;
	char c = *ps->p;

	if (c == '"' || c == '\'') {
		e->type = V_STRING;
		return parse_string(ps, &b) || add_value(ps, e, &b);
	}
	if (c == '[') {
		if (!is_repeatable(ps->repeatable, name))
			return fail(ps, "'%s' takes one value, not an array (only options that may be repeated do)",
				    name);
		e->type = V_ARRAY;
		ps->p++;
		for (;;) {
			skip_blank(ps);
			if (ps->p >= ps->end)
				return fail(ps, "unterminated array");
			if (*ps->p == ']') {
				ps->p++;
				break;
			}
			if (*ps->p != '"' && *ps->p != '\'')
				return fail(ps, "'%s': an array holds strings only here", name);
			if (e->nvals >= MAX_ARRAY_ITEMS)
				return fail(ps, "'%s': more than %u values", name, MAX_ARRAY_ITEMS);
			if (parse_string(ps, &b) || add_value(ps, e, &b))
				return -1;
			skip_blank(ps);
			if (ps->p < ps->end && *ps->p == ',') {
				ps->p++;
				continue;
			}
			if (ps->p < ps->end && *ps->p == ']') {
				ps->p++;
				break;
			}
			return fail(ps, "expected ',' or ']' in the array");
		}
		return 0;
	}
	if (c == '{')
		return fail(ps, "inline tables are not supported");
	if (c == 't' || c == 'f') {
		size_t n = c == 't' ? 4 : 5;

		if ((size_t)(ps->end - ps->p) >= n && !memcmp(ps->p, c == 't' ? "true" : "false", n) &&
		    (ps->p + n == ps->end || !is_bare(ps->p[n])))
			return fail(ps, "'%s' takes a string or an integer, not a boolean", name);
		return fail(ps, "invalid value (strings need quotes)");
	}
	if ((c >= '0' && c <= '9') || c == '+' || c == '-' ||
	    ((c == 'i' || c == 'n') && (ps->end - ps->p < 4 || !is_bare(ps->p[3])) &&
	     (!strncmp(ps->p, "inf", 3) || !strncmp(ps->p, "nan", 3)))) {
		e->type = V_INTEGER;
		return parse_number(ps, &b) || add_value(ps, e, &b);
	}
	if (ps->p >= ps->end || at_newline(ps) || c == '#')
		return fail(ps, "'%s' has no value", name);
	return fail(ps, "invalid value (strings need quotes)");
}

static int parse_line(struct parser *ps)
{
	const char *k = ps->p;
	char key[64];
	struct entry *e;
	unsigned keylen;
	int opt;

	if (*ps->p == '[')
		return fail(ps, "tables are not supported: every key goes at the top level");
	if (*ps->p == '"' || *ps->p == '\'')
		return fail(ps, "quoted keys are not supported");
	while (ps->p < ps->end && is_bare(*ps->p))
		ps->p++;
	keylen = (unsigned)(ps->p - k);
	if (!keylen)
		return fail(ps, "expected a key (letters, digits, '-', '_')");
	if (keylen >= sizeof(key))
		return fail(ps, "key too long");
	memcpy(key, k, keylen);
	key[keylen] = 0;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '.')
		return fail(ps, "dotted keys are not supported");
	if (ps->p >= ps->end || *ps->p != '=')
		return fail(ps, "expected '=' after the key '%s'", key);
	ps->p++;
	skip_ws(ps);
	opt = find_key(ps->opts, key);
	if (opt == -2)
		return fail(ps, "'%s' is not a config key (a command-line option only)", key);
	if (opt < 0)
		return fail(ps, "unknown key '%s': the keys are mearasd's long options (mearasd --help)", key);
	for (unsigned i = 0; i < ps->nentries; i++)
		if (ps->entries[i].opt == opt)
			return fail(ps, "'%s' is given twice (first on line %u)", key, ps->entries[i].line);
	e = realloc(ps->entries, (ps->nentries + 1) * sizeof(*e));
	if (!e)
		return fail(ps, "out of memory");
	ps->entries = e;
	e = &e[ps->nentries++];
	*e = (struct entry){ .opt = opt, .line = ps->line };
	if (parse_value(ps, e))
		return -1;
	skip_ws(ps);
	skip_comment(ps);
	if (ps->p < ps->end && !at_newline(ps))
		return fail(ps, "unexpected text after the value of '%s'", key);
	return 0;
}

static int parse(struct parser *ps)
{
	if (check_text(ps))
		return -1;
	while (ps->p < ps->end) {
		skip_ws(ps);
		skip_comment(ps);
		if (ps->p >= ps->end)
			break;
		if (at_newline(ps)) {
			eat_newline(ps);
			continue;
		}
		if (parse_line(ps))
			return -1;
	}
	return 0;
}

static void free_entries(struct parser *ps)
{
	for (unsigned i = 0; i < ps->nentries; i++) {
		for (unsigned v = 0; v < ps->entries[i].nvals; v++)
			free(ps->entries[i].vals[v]);
		free(ps->entries[i].vals);
	}
	free(ps->entries);
	ps->entries = NULL;
	ps->nentries = 0;
}

static char *read_file(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "mearasd: config file %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > CONFIG_FILE_MAX_BYTES) {
		fprintf(stderr, "mearasd: config file %s: %s\n", path,
			!S_ISREG(st.st_mode) ? "not a regular file" : "larger than 1 MiB");
		close(fd);
		return NULL;
	}
	/* whoever may write it configures a root daemon on its next start */
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		fprintf(stderr, "mearasd: config file %s: owned by uid %u, mode %04o: refused (it must be owned by "
			"root or mearasd's user and writable by no one else)\n", path, (unsigned)st.st_uid,
			(unsigned)(st.st_mode & 07777));
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!buf || got != (size_t)st.st_size) {
		fprintf(stderr, "mearasd: config file %s: cannot read it\n", path);
		free(buf);
		return NULL;
	}
	buf[got] = 0;
	*len = got;
	return buf;
}

/* Which options the command line gives, and --config: getopt over a copy. */
static int scan_command_line(int argc, char **argv, const struct option *opts, bool *given, const char **path,
			     bool *skip_file)
{
	char **copy = malloc(((size_t)argc + 1) * sizeof(*copy));
	int c, idx, saved = opterr;

	if (!copy)
		return -1;
	memcpy(copy, argv, ((size_t)argc + 1) * sizeof(*copy));
	opterr = 0;
	optind = 0;
	while (idx = -1, (c = getopt_long(argc, copy, "h", opts, &idx)) != -1) {
		if (c == 'h')
			*skip_file = true;
		if (idx < 0)
			continue;
		given[idx] = true;
		if (!strcmp(opts[idx].name, "config"))
			*path = optarg;
		else if (!strcmp(opts[idx].name, "help") || !strcmp(opts[idx].name, "version"))
			*skip_file = true;
	}
	opterr = saved;
	optind = 0;
	free(copy);
	return 0;
}

int config_file_merge(int argc, char **argv, const struct option *opts, const char *const *repeatable,
		      int *out_argc, char ***out_argv)
{
	struct parser ps = { .opts = opts, .repeatable = repeatable, .line = 1 };
	const char *path = NULL;
	bool skip_file = false, *given;
	unsigned nopts = 0, nargs = 0;
	char **merged, *text = NULL;
	size_t len = 0;
	struct stat st;

	while (opts[nopts].name)
		nopts++;
	given = calloc(nopts + 1, sizeof(*given));
	noted = calloc(nopts + 1, sizeof(*noted));
	noted_size = nopts;
	if (!given || !noted || scan_command_line(argc, argv, opts, given, &path, &skip_file))
		return fprintf(stderr, "mearasd: out of memory\n"), -1;
	if (!path && stat(CONFIG_FILE_DEFAULT, &st) == 0)
		path = CONFIG_FILE_DEFAULT;
	if (skip_file || (path && !*path))
		path = NULL; /* --config= : no file */
	if (path) {
		if (!(text = read_file(path, &len)))
			return free(given), -1;
		ps.path = path;
		ps.p = text;
		ps.end = text + len;
		if (parse(&ps)) {
			free_entries(&ps);
			free(text);
			free(given);
			return -1;
		}
		free(text);
	}
	for (unsigned i = 0; i < ps.nentries; i++)
		if (!given[ps.entries[i].opt])
			nargs += ps.entries[i].nvals;
	merged = calloc((size_t)argc + nargs + 1, sizeof(*merged));
	file_args = calloc(nargs + 1, sizeof(*file_args));
	file_arg_line = calloc(nargs + 1, sizeof(*file_arg_line));
	file_arg_entry = calloc(nargs + 1, sizeof(*file_arg_entry));
	if (!merged || !file_args || !file_arg_line || !file_arg_entry)
		return free(given), fprintf(stderr, "mearasd: out of memory\n"), -1;
	merged[0] = argv[0];
	for (unsigned i = 0; i < ps.nentries; i++) {
		const struct entry *e = &ps.entries[i];

		if (given[e->opt])
			continue; /* the command line wins */
		for (unsigned v = 0; v < e->nvals; v++) {
			char *a;

			if (asprintf(&a, "--%s=%s", opts[e->opt].name, e->vals[v]) < 0)
				return free(given), fprintf(stderr, "mearasd: out of memory\n"), -1;
			file_args[nfile_args] = a;
			file_arg_line[nfile_args] = e->line;
			file_arg_entry[nfile_args] = i;
			merged[1 + nfile_args++] = a;
		}
	}
	for (int i = 1; i < argc; i++)
		merged[nfile_args + (unsigned)i] = argv[i];
	file_entries = ps.entries;
	file_path = path;
	free(given);
	*out_argc = argc + (int)nfile_args;
	*out_argv = merged_argv = merged;
	optind = 0;
	return 0;
}

/* the file argument whose text holds s, or -1 */
static int file_arg_of(const char *s)
{
	for (unsigned i = 0; s && i < nfile_args; i++)
		if (s >= file_args[i] && s <= file_args[i] + strlen(file_args[i]))
			return (int)i;
	return -1;
}

void config_file_blame(void)
{
	int a = file_arg_of(current_arg);

	if (a >= 0)
		fprintf(stderr, "mearasd: (that value is from %s:%u)\n", file_path, file_arg_line[a]);
}

/* "0", or digits without a leading zero, that fit in TOML's 64-bit integers */
static bool canonical_integer(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 18 || (s[0] == '0' && n > 1))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

void config_file_note(const struct option *opts, int idx, const char *arg)
{
	struct noted *n;
	int a;

	current_arg = idx < 0 ? NULL : arg;
	if (idx < 0 || (unsigned)idx >= noted_size || !noted || opts[idx].has_arg != required_argument || !arg ||
	    !strcmp(opts[idx].name, "config"))
		return;
	n = &noted[idx];
	a = file_arg_of(arg);
	n->vals = realloc(n->vals, (n->n + 1) * sizeof(*n->vals));
	n->integer = realloc(n->integer, (n->n + 1) * sizeof(*n->integer));
	if (!n->vals || !n->integer) {
		n->n = 0;
		return;
	}
	n->vals[n->n] = strdup(arg);
	/* the file's values keep their TOML type; the command line's are
	 * integers where they are written as one */
	n->integer[n->n] = a >= 0 ? file_entries[file_arg_entry[a]].type == V_INTEGER : canonical_integer(arg);
	if (n->vals[n->n])
		n->n++;
}

static void print_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\b': fputs("\\b", f); break;
		case '\t': fputs("\\t", f); break;
		case '\n': fputs("\\n", f); break;
		case '\f': fputs("\\f", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (c < 0x20 || c == 0x7f)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

static bool valid_utf8(const char *s)
{
	size_t len = strlen(s);

	for (size_t i = 0, n; i < len; i += n)
		if (!(n = utf8_len((const unsigned char *)s + i, len - i)))
			return false;
	return true;
}

void config_file_print(FILE *f, const struct option *opts, const char *const *repeatable)
{
	fprintf(f, "# mearasd's effective options: %s%s, then the command line\n",
		file_path ? "the config file " : "no config file", file_path ? file_path : "");
	for (unsigned i = 0; noted && i < noted_size; i++) {
		const struct noted *n = &noted[i];
		bool rep = is_repeatable(repeatable, opts[i].name);
		unsigned first = rep ? 0 : n->n - 1;

		if (!n->n)
			continue;
		for (unsigned v = first; v < n->n; v++)
			if (!valid_utf8(n->vals[v])) {
				fprintf(f, "# %s: a value that is not valid UTF-8 (not shown)\n", opts[i].name);
				goto next;
			}
		fprintf(f, "%s = %s", opts[i].name, rep ? "[" : "");
		for (unsigned v = first; v < n->n; v++) {
			if (v > first)
				fputs(", ", f);
			if (n->integer[v])
				fputs(n->vals[v], f);
			else
				print_string(f, n->vals[v]);
		}
		fputs(rep ? "]\n" : "\n", f);
next:;
	}
}
