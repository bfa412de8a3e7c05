/*
 * mb_host: the host a run happens on: its name, its CPU model, and where
 * the process may run and allocate (CPU and memory binding, through
 * libnuma), whether muonbench set that binding or inherited it (numactl).
 */
#ifndef MB_HOST_H
#define MB_HOST_H

#include <stddef.h>
#include <stdint.h>

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

/*
 * The value of KEY ("MemAvailable", "Node 1 MemFree") in TEXT, as
 * /proc/meminfo and a NUMA node's meminfo write it ("KEY:  123 kB"), in
 * bytes into *bytes. 0, or -MB_EINPUT when TEXT has no such line.
 */
int mb_host_meminfo_value(const char *text, const char *key, uint64_t *bytes);

/*
 * The host memory this process can still have, into *bytes, and where the
 * figure comes from, for people, into WHERE (LEN bytes): MemAvailable of
 * /proc/meminfo; under a memory binding to only some of the NUMA nodes
 * (--membind, --numa auto, numactl -m), the free and reclaimable memory of
 * those nodes (MemFree, Inactive(file) and SReclaimable of their meminfo)
 * when that is less. -MB_EFAIL when /proc/meminfo cannot be read.
 */
int mb_host_mem_available(uint64_t *bytes, char *where, size_t len);

#endif
