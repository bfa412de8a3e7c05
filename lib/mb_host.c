/*
 * mb_host: host name, CPU model, and CPU and memory binding with libnuma.
 */
#include "mb_host.h"

#include <dirent.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_err.h"

/*
 * libnuma prints its own warnings and errors to stderr; these replace its
 * weak defaults, so that a bad list gives muonbench's one line only.
 */
void numa_warn(int num, char *fmt, ...)
{
	(void)num;
	(void)fmt;
}

void numa_error(char *where)
{
	(void)where;
}

/*
 * Run every thread of the process on the CPUs of MASK: the runtime's own
 * threads (an OpenCL driver starts some when it is first asked for its
 * devices) as well as this one and those it starts later. 0, or -1 when
 * this thread could not be moved.
 */
static int set_affinity_all(struct bitmask *mask)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			numa_sched_setaffinity(atoi(e->d_name), mask);
	if (d)
		closedir(d);
	return numa_sched_setaffinity(0, mask);
}

int mb_host_bind_node(int node)
{
	struct bitmask *cpus = numa_allocate_cpumask(), *mems = numa_allocate_nodemask();
	int err = 0;

	if (!cpus || !mems || numa_available() < 0 || node > numa_max_node() ||
	    numa_node_to_cpus(node, cpus) || set_affinity_all(cpus))
		err = mb_fail("cannot bind to NUMA node %d (libnuma refused it)", node);
	if (!err) {
		numa_bitmask_setbit(mems, (unsigned)node);
		numa_set_membind(mems);
	}
	if (cpus)
		numa_free_cpumask(cpus);
	if (mems)
		numa_free_nodemask(mems);
	return err;
}

int mb_host_bind(const char *cpus, const char *mems)
{
	struct bitmask *mask;

	if ((cpus || mems) && numa_available() < 0)
		return mb_bad_input("--cpus/--membind: this kernel has no NUMA support (libnuma "
				    "says numa_available() < 0)");
	if (cpus) {
		mask = numa_parse_cpustring_all(cpus);
		if (!mask)
			return mb_bad_input("--cpus: invalid CPU list '%s' (expected a list of "
					    "CPUs this machine has, such as 0-3,8)",
					    cpus);
		if (set_affinity_all(mask)) {
			numa_free_cpumask(mask);
			return mb_bad_input("--cpus: cannot run on CPUs '%s' (none of them is "
					    "allowed here)",
					    cpus);
		}
		numa_free_cpumask(mask);
	}
	if (mems) {
		mask = numa_parse_nodestring_all(mems);
		if (!mask)
			return mb_bad_input("--membind: invalid node list '%s' (expected a list of "
					    "NUMA nodes this machine has, such as 0 or 0-1)",
					    mems);
		numa_set_membind(mask);
		numa_free_nodemask(mask);
	}
	return 0;
}

/* "0-3,8" for the bits set in MASK. */
static void describe_mask(struct bitmask *mask, char *buf, size_t len)
{
	unsigned i, n = mask ? (unsigned)numa_bitmask_nbytes(mask) * 8 : 0, start;
	size_t used = 0;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (!numa_bitmask_isbitset(mask, i))
			continue;
		for (start = i; i + 1 < n && numa_bitmask_isbitset(mask, i + 1); i++)
			;
		if (used < len)
			used += (size_t)snprintf(buf + used, len - used,
						 start == i ? "%s%u" : "%s%u-%u", used ? "," : "",
						 start, i);
	}
}

static void cpu_model(char *buf, size_t len)
{
	char line[512], *colon;
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) || !(colon = strchr(line, ':')))
			continue;
		colon += 1 + strspn(colon + 1, " \t");
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
}

void mb_host_describe(struct mb_host *h, const char *binding)
{
	struct bitmask *mask;

	memset(h, 0, sizeof(*h));
	if (gethostname(h->name, sizeof(h->name) - 1))
		snprintf(h->name, sizeof(h->name), "unknown");
	cpu_model(h->cpu_model, sizeof(h->cpu_model));
	snprintf(h->binding, sizeof(h->binding), "%s", binding);
	snprintf(h->cpus, sizeof(h->cpus), "unknown");
	snprintf(h->mems, sizeof(h->mems), "unknown");
	if (numa_available() < 0)
		return;
	mask = numa_allocate_cpumask();
	if (mask && numa_sched_getaffinity(0, mask) >= 0)
		describe_mask(mask, h->cpus, sizeof(h->cpus));
	if (mask)
		numa_free_cpumask(mask);
	mask = numa_get_membind();
	if (mask) {
		describe_mask(mask, h->mems, sizeof(h->mems));
		numa_free_nodemask(mask);
	}
}
