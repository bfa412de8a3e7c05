/*
 * mb_host: the host a run happens on: its name, its CPU model, and where
 * the process may run and allocate (CPU and memory binding, through
 * libnuma), whether muonbench set that binding or inherited it (numactl).
 */
#ifndef MB_HOST_H
#define MB_HOST_H

#include <stddef.h>

struct mb_host {
	char name[128], cpu_model[128];
	char cpus[256];	  /* CPUs the process may run on: "0-47" */
	char mems[128];	  /* NUMA nodes it allocates from: "1" */
	char binding[16]; /* "muonbench" (--cpus, --membind), "numa auto" or "inherited" */
};

/*
 * Bind the process (and the threads it starts later) to the CPU list CPUS
 * and its memory to the node list MEMS, as numactl -C CPUS -m MEMS would;
 * either may be NULL to leave it as inherited. Bad lists are -MB_EINPUT.
 */
int mb_host_bind(const char *cpus, const char *mems);

/* Run every thread on the CPUs of NUMA node NODE, and allocate there. */
int mb_host_bind_node(int node);

/* Describe the host and the binding now in force, which BINDING set. */
void mb_host_describe(struct mb_host *h, const char *binding);

#endif
