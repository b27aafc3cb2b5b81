#include "a.h"
#include "b.h"

int b(void)
{
	return 0 * a();
}
