// SPDX-License-Identifier: MIT
/*
 * The replies of a remote vGPU (forward.h): a reaper thread keeps
 * REAP_OUTSTANDING asynchronous REAP calls outstanding; the link's receive
 * thread applies each reply as it is read, item by item: device-to-host
 * bytes straight from the socket into the client's data area, DONE marks,
 * the device's changes to mapped memory, device output, completions.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control/vgpustats.h"
#include "core/worker.h"
#include "forward.h"
#include "mapped.h"
#include "mearas/clock.h"
#include "mearas/hoptrace.h"
#include "mearas/log.h"
#include "messages.h"
#include "remote_link.h"

/* Reads and drops n bytes of the reply. */
static int skip_reply(struct mearas_link_reader *r, uint64_t n)
{
	uint8_t sink[4096];

	while (n) {
		size_t k = n < sizeof(sink) ? (size_t)n : sizeof(sink);
		int rc = mearas_link_read(r, sink, k);

		if (rc)
			return rc;
		n -= k;
	}
	return 0;
}

static void apply_cqe(struct vgpu *v, struct remote_item_cqe *ic)
{
	struct remote_vgpu *rv = rv_of(v);
	struct remote_token t;

	if (ic->cqe.flags & MEARAS_CQE_HOST_FUNC) {
		ic->cqe.val[1] = v->index; /* the remote knows it as its vGPU 0 */
		forward_post(v, 0, &ic->cqe);
	} else if (remote_tokens_take(&rv->tokens, ic->cqe.user_data, &t)) {
		ic->cqe.user_data = t.user_data;
		mearas_hop(MEARAS_HOP_fwd_applied);
		if (v->stats) {
			if (ic->cqe.status)
				vstat_add(&v->stats->errors, 1);
			if (t.taken_ns)
				vstat_sync_done(v->stats, mearas_mono_ns() - t.taken_ns);
		}
		forward_post(v, t.cq, &ic->cqe);
	} else {
		log_warn("vGPU %u: remote completion for unknown record %llu dropped", v->index,
			 (unsigned long long)ic->cqe.user_data);
	}
}

/*
 * Apply one REAP reply as it is read, item by item, in order: device-to-host
 * bytes go straight from the socket into the data area. 0, or the link error
 * (the link then fails every call: nothing more to apply).
 */
static int apply_reply(struct vgpu *v, struct mearas_link_reader *r)
{
	struct remote_vgpu *rv = rv_of(v);
	static __thread uint8_t small[65536 + 64];
	int rc = 0;

	while (!rc && mearas_link_read_left(r) >= sizeof(struct remote_item_hdr)) {
		struct remote_item_hdr ih;

		rc = mearas_link_read(r, &ih, sizeof(ih));
		if (rc)
			break;
		if (ih.len > mearas_link_read_left(r)) {
			log_warn("vGPU %u: malformed item (length %u) from %s", v->index, ih.len, rv->peer);
			break;
		}
		if (ih.type == REMOTE_ITEM_CQE && ih.len == sizeof(struct remote_item_cqe)) {
			struct remote_item_cqe ic;

			rc = mearas_link_read(r, &ic, sizeof(ic));
			if (!rc)
				apply_cqe(v, &ic);
		} else if (ih.type == REMOTE_ITEM_DONE && ih.len == sizeof(struct remote_item_done)) {
			struct remote_item_done d;

			rc = mearas_link_read(r, &d, sizeof(d));
			if (!rc)
				d2h_done(rv, d.id);
		} else if (ih.type == REMOTE_ITEM_DATA && ih.len >= sizeof(struct remote_item_data)) {
			struct remote_item_data d;
			uint64_t n = ih.len - sizeof(d);

			rc = mearas_link_read(r, &d, sizeof(d));
			if (rc)
				break;
			if (d.off <= v->w->data_size && n <= v->w->data_size - d.off) {
				rc = mearas_link_read(r, v->w->data + d.off, n);
				/* a copy's bytes: the same on both nodes now */
				if (!rc)
					remote_mapped_absorb(rv->mapped, v->w->data, d.off, n);
			} else {
				log_warn("vGPU %u: remote data out of the data area dropped", v->index);
				rc = skip_reply(r, n);
			}
		} else if (ih.type == REMOTE_ITEM_DATA_BULK && ih.len == sizeof(struct remote_item_data_bulk)) {
			struct remote_item_data_bulk b;

			/* its bytes came over the data connections (forward_bulk_dest put
			 * them in place): wait until all have landed, then they count */
			rc = mearas_link_read(r, &b, sizeof(b));
			if (!rc)
				rc = mearas_link_bulk_wait(rv->link, b.len);
			if (!rc && b.off <= v->w->data_size && b.len <= v->w->data_size - b.off)
				remote_mapped_absorb(rv->mapped, v->w->data, b.off, b.len);
			if (!rc)
				__atomic_fetch_add(&rv->d2h_bulk_bytes, b.len, __ATOMIC_RELAXED);
		} else if (ih.type == REMOTE_ITEM_MAPPED && ih.len >= sizeof(struct remote_item_data) &&
			   ih.len <= sizeof(small)) {
			struct remote_item_data d;
			uint64_t n = ih.len - sizeof(d);

			rc = mearas_link_read(r, &d, sizeof(d));
			if (!rc)
				rc = mearas_link_read(r, small, n);
			if (!rc && d.off <= v->w->data_size && n <= v->w->data_size - d.off)
				remote_mapped_write(rv->mapped, v->w->data, d.off, small, n);
			else if (!rc)
				log_warn("vGPU %u: remote mapped bytes out of the data area dropped", v->index);
		} else if ((ih.type == REMOTE_ITEM_OUTPUT || ih.type == REMOTE_ITEM_FATAL) && ih.len <= sizeof(small) &&
			   (ih.type == REMOTE_ITEM_FATAL || ih.len >= sizeof(struct remote_item_output))) {
			rc = mearas_link_read(r, small, ih.len);
			if (rc)
				break;
			if (ih.type == REMOTE_ITEM_OUTPUT) {
				struct remote_item_output o;

				memcpy(&o, small, sizeof(o));
				/* our stdout/stderr are the client's output pipes */
				if ((o.fd == 1 || o.fd == 2) &&
				    write((int)o.fd, small + sizeof(o), ih.len - sizeof(o)) < 0)
					log_warn("vGPU %u: device output: %s", v->index, strerror(errno));
			} else {
				char msg[256];
				size_t n = ih.len < sizeof(msg) - 1 ? ih.len : sizeof(msg) - 1;

				memcpy(msg, small, n);
				msg[n] = 0;
				forward_fail_link(v, MEARAS_LINK_E_BROKEN, msg);
			}
		} else {
			log_warn("vGPU %u: malformed item (type %u) from %s", v->index, ih.type, rv->peer);
			break; /* the rest of the reply is skipped */
		}
	}
	return rc;
}

/* On the link's receive thread: one REAP reply starts (or the link broke). */
static void reap_done(void *ctx, int status, size_t len, struct mearas_link_reader *r)
{
	struct reap_slot *slot = ctx;
	struct vgpu *v = slot->v;
	struct remote_vgpu *rv = rv_of(v);

	(void)len;
	if (status)
		forward_fail_link(v, status, mearas_link_strerror(status));
	else
		apply_reply(v, r); /* a read error breaks the link: its calls fail with it */
	pthread_mutex_lock(&rv->reap_lock);
	slot->next_free = rv->free_slots;
	rv->free_slots = slot;
	/* the forwarder's next batch takes the slot again; the reaper only
	 * when few calls are left outstanding */
	if (REAP_OUTSTANDING - ++rv->nfree <= REAP_LOW)
		pthread_cond_signal(&rv->reap_cond);
	pthread_mutex_unlock(&rv->reap_lock);
}

static struct reap_slot *take_slot(struct remote_vgpu *rv)
{
	struct reap_slot *slot = rv->free_slots;

	if (slot) {
		rv->free_slots = slot->next_free;
		rv->nfree--;
	}
	return slot;
}

static const uint32_t reap_req[2] = { REMOTE_MSG_REAP, 0 };

int reap_flush(struct vgpu *v)
{
	struct remote_vgpu *rv = rv_of(v);
	struct reap_slot *slot;

	pthread_mutex_lock(&rv->reap_lock);
	slot = take_slot(rv);
	pthread_mutex_unlock(&rv->reap_lock);
	if (!slot)
		return mearas_link_flush(rv->link);
	rv->reaps_piggybacked++;
	/* the batch and the call leave in one frame; a failed send completes
	 * the call with the error (reap_done gives the slot back) */
	return mearas_link_call_stream(rv->link, reap_req, sizeof(reap_req), reap_done, slot);
}

/* Keeps REAP calls outstanding where the forwarder does not (reap_flush):
 * once no more than REAP_LOW are, it sends every free one again. */
static void *reaper_main(void *arg)
{
	struct vgpu *v = arg;
	struct remote_vgpu *rv = rv_of(v);
	bool refill = true; /* at start: all of them */

	pthread_mutex_lock(&rv->reap_lock);
	while (!v->w->stop && !__atomic_load_n(&rv->failed, __ATOMIC_ACQUIRE)) {
		struct reap_slot *slot;
		int rc;

		if (REAP_OUTSTANDING - rv->nfree <= REAP_LOW)
			refill = true;
		slot = refill ? take_slot(rv) : NULL;
		if (!slot) {
			struct timespec ts = mearas_realtime_after_ms(200);

			refill = false;
			pthread_cond_timedwait(&rv->reap_cond, &rv->reap_lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&rv->reap_lock);
		rc = mearas_link_call_stream(rv->link, reap_req, sizeof(reap_req), reap_done, slot);
		pthread_mutex_lock(&rv->reap_lock);
		if (rc) {
			forward_fail_link(v, rc, mearas_link_strerror(rc));
			break;
		}
	}
	pthread_mutex_unlock(&rv->reap_lock);
	return NULL;
}

int reap_start(struct vgpu *v)
{
	struct remote_vgpu *rv = rv_of(v);

	if (pthread_create(&rv->reaper, NULL, reaper_main, v))
		return -1;
	/* it may sit in a call until the process exits */
	pthread_detach(rv->reaper);
	return 0;
}
