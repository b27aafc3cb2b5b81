// SPDX-License-Identifier: MIT
/* host-backend/remote/mapped.c: what each node sends of a mapped range. Two data areas
 * (client and remote) are kept coherent by hand the way the nodes do it:
 * changed bytes travel, runs closer than 256 bytes joined into one piece,
 * and the receiver takes only the bytes of a piece that differ from its
 * shadow; bytes a copy carried (absorb) and bytes the other node sent
 * (write) are not sent back; host and device changing different bytes of
 * one range both survive, also between joined runs; unmapping stops it. */
#include <string.h>

#include "check.h"
#include "remote/budget.h"
#include "remote/mapped.h"

#define AREA 4096

static uint8_t client[AREA], remote[AREA];
static struct remote_mapped *c, *r;     /* the client's and the remote's view */

struct sent {
	uint64_t off[64], len[64];
	uint8_t bytes[64][AREA];
	unsigned n;
};

static int record(void *ctx, uint64_t off, const uint8_t *bytes, uint64_t len)
{
	struct sent *s = ctx;

	REQUIRE(s->n < 64);
	s->off[s->n] = off;
	s->len[s->n] = len;
	memcpy(s->bytes[s->n], bytes, len);
	s->n++;
	return 0;
}

/* what one node sent, applied on the other */
static void deliver(const struct sent *s, struct remote_mapped *to, uint8_t *base)
{
	for (unsigned i = 0; i < s->n; i++)
		remote_mapped_write(to, base, s->off[i], s->bytes[i], s->len[i]);
}

/* both nodes map [1024, 1280) of areas holding 7s */
static void map_both(void)
{
	c = remote_mapped_new();
	r = remote_mapped_new();
	REQUIRE(c && r);
	CHECK(!remote_mapped_any(c));
	memset(client, 7, sizeof(client));
	memcpy(remote, client, sizeof(remote)); /* the client pushed the range when mapping it */
	REQUIRE(remote_mapped_set(c, client, 1024, 256, true));
	REQUIRE(remote_mapped_set(r, remote, 1024, 256, true));
	CHECK(remote_mapped_any(c));
}

static void free_both(void)
{
	remote_mapped_free(c);
	remote_mapped_free(r);
	c = r = NULL;
}

/* what `from` sends now, applied on `to`; returns the number of runs */
static unsigned sync_once(struct remote_mapped *from, uint8_t *from_base, struct remote_mapped *to,
			  uint8_t *to_base, struct sent *s)
{
	memset(s, 0, sizeof(*s));
	remote_mapped_diff(from, from_base, record, s);
	deliver(s, to, to_base);
	return s->n;
}

/* nothing changed: nothing goes */
static void unchanged_sends_nothing(void)
{
	static struct sent s;

	CHECK_EQ(remote_mapped_diff(c, client, record, &s), 0);
	CHECK_EQ(s.n, 0);
}

/* the host changes two runs close together (and a byte outside the range):
 * one piece from the first changed byte to the last goes */
static void near_runs_join(void)
{
	static struct sent s;

	client[1024 + 3] = 1;
	client[1024 + 4] = 2;
	client[1024 + 100] = 3;
	client[2000] = 9;
	CHECK_EQ(remote_mapped_diff(c, client, record, &s), 98);
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.off[0], 1024 + 3);
	CHECK_EQ(s.len[0], 98);
	deliver(&s, r, remote);
	CHECK(remote[1024 + 3] == 1 && remote[1024 + 4] == 2 && remote[1024 + 100] == 3);
	CHECK(remote[1024 + 50] == 7 && remote[2000] == 7);
	/* what the remote got from the client is not a remote change */
	memset(&s, 0, sizeof(s));
	CHECK_EQ(remote_mapped_diff(r, remote, record, &s), 0);
}

/* runs 256 bytes or more apart go as pieces of their own */
static void far_runs_split(void)
{
	static struct sent s;

	REQUIRE(remote_mapped_set(c, client, 2048, 2048, true));
	client[2048 + 10] = 1;
	client[2048 + 10 + 256 + 1] = 2;
	CHECK_EQ(remote_mapped_diff(c, client, record, &s), 2);
	CHECK_EQ(s.n, 2);
	CHECK(s.off[0] == 2048 + 10 && s.len[0] == 1 && s.off[1] == 2048 + 267 && s.len[1] == 1);
}

/* one byte of every word changed: a handful of pieces, not one per byte */
static void every_word_changed_is_few_pieces(void)
{
	static struct sent s;

	REQUIRE(remote_mapped_set(c, client, 2048, 2048, true));
	REQUIRE(remote_mapped_set(r, remote, 2048, 2048, true));
	for (unsigned i = 0; i < 2048; i += 4)
		client[2048 + i] = (uint8_t)(i / 4);
	CHECK_EQ(sync_once(c, client, r, remote, &s), 1);
	CHECK(memcmp(client + 2048, remote + 2048, 2048) == 0);
}

/* the receiver's own write between two joined runs survives */
static void gap_bytes_keep_receiver_writes(void)
{
	static struct sent s;

	remote[1024 + 20] = 0xd;       /* the device, between the host's two runs */
	client[1024 + 10] = 0xa;
	client[1024 + 30] = 0xb;
	CHECK_EQ(sync_once(c, client, r, remote, &s), 1);
	CHECK(remote[1024 + 10] == 0xa && remote[1024 + 30] == 0xb);
	CHECK(remote[1024 + 20] == 0xd);
	CHECK_EQ(sync_once(r, remote, c, client, &s), 1);
	CHECK(client[1024 + 20] == 0xd && client[1024 + 10] == 0xa && client[1024 + 30] == 0xb);
}

/* the device changes byte 10 while the host changes byte 11: both survive */
static void both_sides_changes_survive(void)
{
	static struct sent s;

	remote[1024 + 10] = 0xd;
	client[1024 + 11] = 0xc;
	sync_once(c, client, r, remote, &s);
	CHECK_EQ(sync_once(r, remote, c, client, &s), 1);
	CHECK_EQ(s.off[0], 1024 + 10);
	CHECK(client[1024 + 10] == 0xd && client[1024 + 11] == 0xc);
	CHECK(remote[1024 + 10] == 0xd && remote[1024 + 11] == 0xc);
	memset(&s, 0, sizeof(s));
	CHECK_EQ(remote_mapped_diff(c, client, record, &s), 0); /* nothing echoes back */
}

/* a device-to-host copy carried bytes into the range: absorbed, not sent again */
static void absorbed_not_sent(void)
{
	static struct sent s;

	memset(remote + 1024 + 32, 5, 16);
	memset(client + 1024 + 32, 5, 16);
	remote_mapped_absorb(r, remote, 1024 + 32, 16);
	remote_mapped_absorb(c, client, 0, 1024 + 48); /* overlap only counts */
	CHECK_EQ(remote_mapped_diff(r, remote, record, &s), 0);
	CHECK_EQ(remote_mapped_diff(c, client, record, &s), 0);
}

/* a range runs to its last byte */
static void range_runs_to_last_byte(void)
{
	static struct sent s;

	client[1024 + 255] = 0x55;
	CHECK_EQ(remote_mapped_diff(c, client, record, &s), 1);
	CHECK_EQ(s.off[0], 1024 + 255);
}

/* unmapped: nothing tracked */
static void unmapped_not_tracked(void)
{
	static struct sent s;

	CHECK(remote_mapped_set(c, client, 1024, 256, false));
	CHECK(!remote_mapped_any(c));
	client[1024] = 0x77;
	CHECK_EQ(remote_mapped_diff(c, client, record, &s), 0);
}

static const struct check_case cases[] = {
	{ "unchanged_sends_nothing", unchanged_sends_nothing },
	{ "near_runs_join", near_runs_join },
	{ "far_runs_split", far_runs_split },
	{ "every_word_changed_is_few_pieces", every_word_changed_is_few_pieces },
	{ "gap_bytes_keep_receiver_writes", gap_bytes_keep_receiver_writes },
	{ "both_sides_changes_survive", both_sides_changes_survive },
	{ "absorbed_not_sent", absorbed_not_sent },
	{ "range_runs_to_last_byte", range_runs_to_last_byte },
	{ "unmapped_not_tracked", unmapped_not_tracked },
};
CHECK_MAIN_FIXTURE(cases, map_both, free_both)
