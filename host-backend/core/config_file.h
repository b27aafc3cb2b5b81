/* SPDX-License-Identifier: MIT */
/*
 * mearasd's config file (--config=FILE, default CONFIG_FILE_DEFAULT when it
 * exists): a strict subset of TOML whose keys are mearasd's long options
 * that take a value, taken from its getopt table, so that every new option
 * is a key too. `quota-mb = 4096` is --quota-mb=4096; a repeatable option
 * (--remote, --vm) takes an array of strings. Options on the command line
 * win: a key whose option is on the command line is left out whole.
 *
 * The subset: comments, bare keys, basic and literal strings (one line),
 * decimal integers, booleans (refused: no option is a switch) and arrays of
 * strings (over several lines too). Anything else (tables, dotted or quoted
 * keys, floats, dates, multi-line strings, inline tables) is an error
 * naming FILE:LINE.
 */
#ifndef MEARAS_CONFIG_FILE_H
#define MEARAS_CONFIG_FILE_H

#include <getopt.h>
#include <stdio.h>

#define CONFIG_FILE_DEFAULT "/etc/mearas/mearasd.toml"
#define CONFIG_FILE_MAX_BYTES (1u << 20)

/*
 * The arguments to parse: argv[0], the config file's options as
 * "--KEY=VALUE" and then argv[1..]. opts is the getopt table (its option
 * named "config" names the file; "help" and "version" skip it),
 * repeatable the names of options that may be given more than once (NULL
 * ends the list). Prints the reason and returns -1 when the file cannot be
 * read or is not valid.
 */
int config_file_merge(int argc, char **argv, const struct option *opts, const char *const *repeatable,
		      int *out_argc, char ***out_argv);

/* After getopt_long returned option opts[idx] (idx < 0: a short one, or
 * the end of the options) with arg: kept for config_file_print. */
void config_file_note(const struct option *opts, int idx, const char *arg);

/* When the option noted last was refused: names the file and line it came
 * from, if it came from the file. */
void config_file_blame(void);

/* The effective options (those noted) as a TOML file mearasd reads back. */
void config_file_print(FILE *f, const struct option *opts, const char *const *repeatable);

#endif
