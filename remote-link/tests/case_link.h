/* Each case's server (srv) and link (lnk) in the remote-link tests, closed
 * after it: case_setup before a case, case_teardown after it (the fixture of
 * CHECK_MAIN_FIXTURE), link_close and server_stop where a case ends one early.
 * Include after test_server.h and log_capture.h. */
#ifndef REMOTE_LINK_TESTS_CASE_LINK_H
#define REMOTE_LINK_TESTS_CASE_LINK_H

#include <signal.h>
#include <string.h>

static struct ts_local srv;
static struct mearas_link *lnk;

static void link_close(void)
{
	if (lnk)
		mearas_link_close(lnk);
	lnk = NULL;
}

static void server_stop(void)
{
	if (srv.srv)
		mearas_link_server_stop(srv.srv);
	srv.srv = NULL;
}

static void case_setup(void)
{
	signal(SIGPIPE, SIG_IGN); /* a peer's close must be an error, not the end of the test */
	memset(&srv, 0, sizeof(srv));
	lnk = NULL;
	log_clear();
}

static void case_teardown(void)
{
	link_close();
	server_stop();
}

#endif
