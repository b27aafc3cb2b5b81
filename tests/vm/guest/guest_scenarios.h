#ifndef MEARAS_GUEST_SCENARIOS_H
#define MEARAS_GUEST_SCENARIOS_H

void scenario_plain(void);
void scenario_doorbell(void);
void scenario_idle(void);
void scenario_ping(void);

#endif
