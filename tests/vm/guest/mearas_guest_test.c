/* Guest side of the mearas VM tests: mearas_guest_test plain|doorbell|idle|ping
 * Prints "GUEST-PASS name" / "GUEST-FAIL name: why" per check (the host's
 * check_serial_log reads them), then "N passed, M failed, K skipped". */
#include "check.h"
#include "guest_scenarios.h"

#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s plain|doorbell|idle|ping\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "plain"))
		scenario_plain();
	else if (!strcmp(argv[1], "doorbell"))
		scenario_doorbell();
	else if (!strcmp(argv[1], "idle"))
		scenario_idle();
	else if (!strcmp(argv[1], "ping"))
		scenario_ping();
	else {
		fprintf(stderr, "unknown scenario %s\n", argv[1]);
		return 2;
	}
	return check_done();
}
