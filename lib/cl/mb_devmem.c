/*
 * mb_devmem: the device's used memory from its driver (NVML, AMD's query),
 * and a sampler thread that keeps its peak.
 */
#include "mb_devmem.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mb_err.h"
#include "mb_words.h"

const char *const mb_devmem_source_names[MB_NDEVMEM_SOURCES] = { MB_DEVMEM_SOURCES(MB_NAME_, ) };

/* Not in Khronos' headers: cl_amd_device_attribute_query, in KiB. */
#define MB_CL_DEVICE_GLOBAL_FREE_MEMORY_AMD 0x4039

#define NVML_LIB "libnvidia-ml.so.1"

/* nvmlMemory_t, as NVML's header declares it (bytes). */
struct nvml_memory {
	unsigned long long total, free, used;
};

static void none(struct mb_devmem *dm, const char *why)
{
	dm->source = MB_DEVMEM_NONE;
	snprintf(dm->why, sizeof(dm->why), "%s", why);
}

/* NVML for the device at PCI (its bus id as sysfs names it); false, with DM->why, if not. */
static bool open_nvml(struct mb_devmem *dm, const char *pci)
{
	int (*init)(void), (*by_pci)(const char *, void **);
	struct nvml_memory mem;

	if (!(dm->lib = dlopen(NVML_LIB, RTLD_NOW | RTLD_LOCAL))) {
		/* glibc keeps the reason until it is read, and frees it at the next read */
		(void)dlerror();
		(void)dlerror();
		none(dm, "no " NVML_LIB " (NVML) to load");
		return false;
	}
	*(void **)&init = dlsym(dm->lib, "nvmlInit_v2");
	*(void **)&by_pci = dlsym(dm->lib, "nvmlDeviceGetHandleByPciBusId_v2");
	*(void **)&dm->memory_info = dlsym(dm->lib, "nvmlDeviceGetMemoryInfo");
	*(void **)&dm->shutdown = dlsym(dm->lib, "nvmlShutdown");
	if (!init || !by_pci || !dm->memory_info || !dm->shutdown) {
		none(dm, NVML_LIB " lacks the calls muonbench needs");
		goto out_close;
	}
	if (init()) {
		none(dm, "nvmlInit_v2 failed");
		dm->shutdown = NULL;
		goto out_close;
	}
	if (by_pci(pci, &dm->nvml_device) || dm->memory_info(dm->nvml_device, &mem)) {
		dm->source = MB_DEVMEM_NONE;
		snprintf(dm->why, sizeof(dm->why), "NVML knows no device at PCI address '%s'", pci);
		goto out_close;
	}
	dm->source = MB_DEVMEM_NVML;
	return true;

out_close:
	if (dm->shutdown)
		dm->shutdown();
	dlclose(dm->lib);
	dm->lib = NULL;
	return false;
}

/* AMD's free memory, in KiB: the total free and the largest free block. */
static cl_int amd_free_kib(cl_device_id device, uint64_t *kib)
{
	size_t v[2] = { 0, 0 };
	cl_int st =
		clGetDeviceInfo(device, MB_CL_DEVICE_GLOBAL_FREE_MEMORY_AMD, sizeof(v), v, NULL);

	*kib = v[0];
	return st;
}

void mb_devmem_open(struct mb_devmem *dm, const struct mb_cl *cl)
{
	const char *off = getenv("MUONBENCH_DEVICE_MEMORY");
	uint64_t kib;

	memset(dm, 0, sizeof(*dm));
	if (off && !strcmp(off, "off")) {
		none(dm, "MUONBENCH_DEVICE_MEMORY=off");
		return;
	}
	if (open_nvml(dm, cl->info.pci))
		return;
	if (strstr(cl->info.vendor, "Advanced Micro Devices") &&
	    amd_free_kib(cl->device, &kib) == CL_SUCCESS) {
		dm->source = MB_DEVMEM_AMD;
		dm->device = cl->device;
		dm->global_bytes = cl->info.global_mem_bytes;
		dm->why[0] = '\0';
		return;
	}
	if (!strstr(cl->info.vendor, "NVIDIA"))
		none(dm, "only NVIDIA's devices (through NVML) and AMD's (through their OpenCL) "
			 "report it");
}

/* The used bytes into *USED: 0, or the driver's status (no message: the sampler's thread calls it).
 */
static int read_used(const struct mb_devmem *dm, uint64_t *used)
{
	struct nvml_memory mem;
	uint64_t kib;
	int st;

	switch (dm->source) {
	case MB_DEVMEM_NVML:
		if ((st = dm->memory_info(dm->nvml_device, &mem)))
			return st;
		*used = mem.used;
		return 0;
	case MB_DEVMEM_AMD:
		if ((st = amd_free_kib(dm->device, &kib)) != CL_SUCCESS)
			return st;
		*used = dm->global_bytes > kib * 1024 ? dm->global_bytes - kib * 1024 : 0;
		return 0;
	default:
		return -1;
	}
}

int mb_devmem_used(const struct mb_devmem *dm, uint64_t *used)
{
	int st = read_used(dm, used);

	if (!st)
		return 0;
	if (dm->source == MB_DEVMEM_NVML)
		return mb_fail("nvmlDeviceGetMemoryInfo failed: NVML status %d", st);
	if (dm->source == MB_DEVMEM_AMD)
		return mb_fail("clGetDeviceInfo(CL_DEVICE_GLOBAL_FREE_MEMORY_AMD) failed: %s",
			       mb_cl_strerror(st));
	return mb_fail("no device memory figure: %s", dm->why);
}

void mb_devmem_close(struct mb_devmem *dm)
{
	if (dm->lib) {
		dm->shutdown();
		dlclose(dm->lib);
	}
	memset(dm, 0, sizeof(*dm));
}

const char *const mb_pinned_copy_names[MB_NPINNED_COPIES] = { MB_PINNED_COPIES(MB_NAME_, ) };

int mb_devmem_pinned_copy(const struct mb_devmem *dm, const struct mb_cl *cl,
			  enum mb_pinned_copy *verdict, uint64_t *grew)
{
	uint64_t before, after;
	const char *call;
	cl_mem buf;
	void *ptr;
	cl_int st;
	int err;

	*verdict = MB_PINNED_COPY_UNKNOWN;
	*grew = 0;
	if (dm->source == MB_DEVMEM_NONE || read_used(dm, &before))
		return 0;
	buf = mb_cl_create_pinned(cl, MB_DEVMEM_PROBE_BYTES, &st, &call);
	if (mb_cl_check(cl, st, call, "a pinned buffer of %u MiB, to see what it takes",
			MB_DEVMEM_PROBE_BYTES >> 20))
		return -MB_EFAIL;
	ptr = clEnqueueMapBuffer(cl->compute, buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
				 MB_DEVMEM_PROBE_BYTES, 0, NULL, NULL, &st);
	err = mb_cl_check(cl, st, "clEnqueueMapBuffer", "a pinned buffer of %u MiB",
			  MB_DEVMEM_PROBE_BYTES >> 20);
	if (!err && !read_used(dm, &after)) {
		*grew = after > before ? after - before : 0;
		*verdict = *grew >= MB_DEVMEM_PROBE_BYTES / 2	? MB_PINNED_COPY_YES
			   : *grew < MB_DEVMEM_PROBE_BYTES / 10 ? MB_PINNED_COPY_NO
								: MB_PINNED_COPY_UNKNOWN;
	}
	if (!err)
		err = mb_cl_check(cl, clEnqueueUnmapMemObject(cl->compute, buf, ptr, 0, NULL, NULL),
				  "clEnqueueUnmapMemObject", "a pinned buffer");
	if (!err)
		err = mb_cl_check(cl, clFinish(cl->compute), "clFinish", "a pinned buffer's unmap");
	clReleaseMemObject(buf);
	return err;
}

/* One reading folded into the peak (a failed one counted). */
static void sample(struct mb_devmem_sampler *s)
{
	uint64_t used, peak;

	if (read_used(s->dm, &used)) {
		atomic_fetch_add(&s->failures, 1);
		return;
	}
	atomic_fetch_add(&s->readings, 1);
	peak = atomic_load(&s->peak);
	while (used > peak && !atomic_compare_exchange_weak(&s->peak, &peak, used))
		;
}

static void *sampler(void *arg)
{
	struct mb_devmem_sampler *s = arg;
	const struct timespec period = { 0, MB_DEVMEM_PERIOD_US * 1000L };

	while (!atomic_load(&s->stop)) {
		if (atomic_load(&s->open))
			sample(s);
		nanosleep(&period, NULL);
	}
	return NULL;
}

int mb_devmem_sampler_start(struct mb_devmem_sampler *s, const struct mb_devmem *dm)
{
	int err;

	memset(s, 0, sizeof(*s));
	s->dm = dm;
	atomic_init(&s->stop, false);
	atomic_init(&s->open, false);
	atomic_init(&s->peak, 0);
	atomic_init(&s->readings, 0);
	atomic_init(&s->failures, 0);
	sigset_t all, was;

	/* no signal handler runs on it: the process's signals go to its other threads */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &was);
	err = pthread_create(&s->thread, NULL, sampler, s);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (err)
		return mb_fail("cannot start the device memory sampler: %s", strerror(err));
	s->running = true;
	return 0;
}

void mb_devmem_sampler_window(struct mb_devmem_sampler *s, bool open)
{
	if (!s->running)
		return;
	/* a reading at each edge: a window shorter than the period still has two */
	if (!open)
		sample(s);
	atomic_store(&s->open, open);
	if (open)
		sample(s);
}

void mb_devmem_sampler_reset(struct mb_devmem_sampler *s)
{
	atomic_store(&s->peak, 0);
}

uint64_t mb_devmem_sampler_peak(struct mb_devmem_sampler *s)
{
	return atomic_load(&s->peak);
}

void mb_devmem_sampler_stop(struct mb_devmem_sampler *s)
{
	if (!s->running)
		return;
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
	s->running = false;
}
