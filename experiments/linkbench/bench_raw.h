/* Plain TCP throughput measured the same way as a link bulk transfer:
 * the sender writes `bytes` in `chunk`-sized writes, the sink reads them all
 * and answers one byte; the time runs from the first write to that answer. */
#ifndef MEARAS_LINKBENCH_BENCH_RAW_H
#define MEARAS_LINKBENCH_BENCH_RAW_H

#include <stddef.h>
#include <stdint.h>

/* Listens on bind_addr:port (0 = any free port, written to *port_out); serves
 * `sessions` senders, then returns. Run it on its own thread or process. */
int raw_sink_listen(const char *bind_addr, uint16_t port, uint16_t *port_out);
int raw_sink_serve(int listen_fd, int sessions);
/* Returns MB/s (1e6 bytes per second), or a negative value on failure. */
double raw_send(const char *host, uint16_t port, size_t bytes, size_t chunk);

#endif
