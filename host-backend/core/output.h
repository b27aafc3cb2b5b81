/* SPDX-License-Identifier: MIT */
/* Device printf/assert output (output.c): the driver writes it to the
 * worker's stdout/stderr, which are pipes whose read ends go to the client. */
#ifndef MEARAS_OUTPUT_H
#define MEARAS_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

struct worker;

int output_capture_pipes(int *out_fd, int *err_fd, char *err, size_t errlen);
/* the worker's stdout/stderr become pipes: w->out_fd, w->err_fd their read ends */
int worker_capture_output(struct worker *w, char *err, size_t errlen);
/* output is waiting for the client in those pipes */
bool worker_output_pending(struct worker *w);

#endif
