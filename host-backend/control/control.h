/* SPDX-License-Identifier: MIT */
/*
 * mearasd's control socket (proto/control.proto): the assembly manager
 * asks for the node's profile and instantiates/releases assemblies here.
 * Served by one thread of the daemon; workers see the assembly table as it
 * was when they were forked (assembly.h).
 */
#ifndef MEARAS_CONTROL_H
#define MEARAS_CONTROL_H

#include <stdbool.h>

struct backend_config;

#define CONTROL_DEFAULT_SOCKET "/run/mearas/control.sock"
/* the largest request frame: the biggest request (an assembly of 16 vGPUs)
 * takes a few KiB, and parsing a frame can take ~60 times its size (each
 * 2-byte empty repeated message becomes a message of its own) */
#define CONTROL_MAX_REQUEST (64u << 10)
/* where the sockets of VMs attached through the control socket are (--vm-dir) */
#define CONTROL_DEFAULT_VM_DIR "/run/mearas/vm"

/*
 * Listens on path and starts the control thread. Call before the first
 * worker is forked. vm_dir: where AttachVm's sockets must be (NULL: the
 * default). Returns 0, or -1 after logging why.
 */
int control_start(const struct backend_config *cfg, const char *path, const char *node, const char *vm_dir);
/* removes the socket file (at exit) */
void control_stop(void);

#endif
