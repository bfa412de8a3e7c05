/*
 * mb_host: host name, CPU model, CPU and memory binding with libnuma, and
 * the memory that is still available where the process allocates.
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

int mb_host_meminfo_value(const char *text, const char *key, uint64_t *bytes)
{
	size_t klen = strlen(key);
	const char *line;
	unsigned long long kb;

	for (line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, key, klen) && line[klen] == ':' &&
		    sscanf(line + klen + 1, "%llu", &kb) == 1) {
			*bytes = kb > UINT64_MAX / 1024 ? UINT64_MAX : 1024 * (uint64_t)kb;
			return 0;
		}
	return mb_bad_input("no '%s' in the memory figures", key);
}

/* The whole of the file at PATH (at most LEN - 1 bytes) into BUF; 0 or -1. */
static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n ? 0 : -1;
}

/*
 * The free and reclaimable bytes of NODE's meminfo into *bytes: 0, or -1
 * when it cannot be read.
 */
static int node_available(int node, uint64_t *bytes)
{
	const char *keys[] = { "MemFree", "Inactive(file)", "SReclaimable" };
	char path[96], key[64], text[8192];
	uint64_t v;
	size_t i;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", node);
	if (read_text(path, text, sizeof(text)))
		return -1;
	*bytes = 0;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(key, sizeof(key), "Node %d %s", node, keys[i]);
		if (mb_host_meminfo_value(text, key, &v))
			return -1;
		*bytes += v;
	}
	return 0;
}

/*
 * Under a binding to only some NUMA nodes, their available bytes into
 * *bytes and their list into NODES: 1; 0 when no such binding is in force
 * or a node's figures cannot be read.
 */
static int bound_available(uint64_t *bytes, char *nodes, size_t len)
{
	struct bitmask *mask;
	uint64_t v;
	int node, bound = 0;

	if (numa_available() < 0 || !(mask = numa_get_membind()))
		return 0;
	*bytes = 0;
	if (!numa_bitmask_equal(mask, numa_all_nodes_ptr)) {
		bound = 1;
		for (node = 0; node <= numa_max_node(); node++) {
			if (!numa_bitmask_isbitset(mask, (unsigned)node))
				continue;
			if (node_available(node, &v)) {
				bound = 0;
				break;
			}
			*bytes += v;
		}
		describe_mask(mask, nodes, len);
	}
	numa_free_nodemask(mask);
	return bound;
}

int mb_host_mem_available(uint64_t *bytes, char *where, size_t len)
{
	char text[16384], nodes[128];
	uint64_t bound;

	if (read_text("/proc/meminfo", text, sizeof(text)) ||
	    mb_host_meminfo_value(text, "MemAvailable", bytes))
		return mb_fail("cannot read MemAvailable from '/proc/meminfo'");
	snprintf(where, len, "MemAvailable");
	if (bound_available(&bound, nodes, sizeof(nodes)) && bound < *bytes) {
		*bytes = bound;
		snprintf(where, len, "free on NUMA node%s %s, where the memory is bound",
			 strpbrk(nodes, ",-") ? "s" : "", nodes);
	}
	return 0;
}
