/*
 * mb_devmem: the device's used memory as its driver sees it, beside the
 * ledger's figure (which is the framework's: what muonbench allocates).
 * The two differ where the driver takes device memory the framework does
 * not ask for: on NVIDIA's OpenCL, a mapped pinned host buffer takes its
 * size on the device too.
 *
 * - NVIDIA: NVML's used memory (nvmlDeviceGetMemoryInfo), the device found
 *   by the OpenCL device's PCI address; libnvidia-ml.so.1 is loaded with
 *   dlopen when the device is opened, never linked, and needs no headers.
 * - AMD: the global memory less CL_DEVICE_GLOBAL_FREE_MEMORY_AMD.
 * - Elsewhere: no figure, and why; and nowhere with MUONBENCH_DEVICE_MEMORY=off
 *   in the environment (bench/sampler-cost.sh times a run without it).
 *
 * A sampler thread reads the figure every MB_DEVMEM_PERIOD_US through a
 * run and keeps the peak of the readings taken while a window is open; it
 * takes no lock the step needs.
 */
#ifndef MB_DEVMEM_H
#define MB_DEVMEM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mb_cl.h"
#include "mb_device.h"

#define MB_DEVMEM_PERIOD_US 5000

extern const char *const mb_devmem_source_names[MB_NDEVMEM_SOURCES];

struct mb_devmem {
	enum mb_devmem_source source;
	char why[256]; /* MB_DEVMEM_NONE: why there is no figure */
	/* NVML, when the source */
	void *lib, *nvml_device;
	int (*memory_info)(void *device, void *memory);
	int (*shutdown)(void);
	/* AMD, when the source */
	cl_device_id device;
	uint64_t global_bytes;
};

/*
 * Find the driver's figure for CL's device into *DM: NVML where the library
 * loads and knows the device's PCI address, else AMD's query where the
 * device answers it, else MB_DEVMEM_NONE with DM->why. It never fails: a
 * figure that cannot be had is none, never 0. Close it with mb_devmem_close.
 */
void mb_devmem_open(struct mb_devmem *dm, const struct mb_cl *cl);

/* The device's used bytes now, into *USED; -MB_EFAIL (naming the call) if the driver will not say.
 */
int mb_devmem_used(const struct mb_devmem *dm, uint64_t *used);

void mb_devmem_close(struct mb_devmem *dm);

extern const char *const mb_pinned_copy_names[MB_NPINNED_COPIES];

#define MB_DEVMEM_PROBE_BYTES (64u << 20) /* of the pinned buffer mb_devmem_pinned_copy maps */

/*
 * Whether CL's driver keeps a device copy of pinned host memory made as
 * CL->pinned_alloc says, into *VERDICT: DM's figure before and after a
 * MB_DEVMEM_PROBE_BYTES pinned buffer is mapped; YES where it grew by half
 * the buffer or more, NO where by less than a tenth, UNKNOWN in between or
 * where DM has no figure. *GREW gets the growth in bytes (0 when unknown).
 * The buffer is released before it returns. A failing OpenCL call is
 * -MB_EFAIL naming it.
 */
int mb_devmem_pinned_copy(const struct mb_devmem *dm, const struct mb_cl *cl,
			  enum mb_pinned_copy *verdict, uint64_t *grew);

/* A thread that reads DM every MB_DEVMEM_PERIOD_US, folding readings into a peak while open. */
struct mb_devmem_sampler {
	const struct mb_devmem *dm;
	pthread_t thread;
	bool running;
	atomic_bool stop, open;
	atomic_uint_fast64_t peak; /* of the readings while open; 0: none yet */
	atomic_uint_fast64_t readings, failures;
};

/*
 * Start a sampler of DM (a source other than none), its window closed. A
 * thread that cannot start is -MB_EFAIL.
 */
int mb_devmem_sampler_start(struct mb_devmem_sampler *s, const struct mb_devmem *dm);

/* Open (OPEN true) or close the window; the peak so far stays. */
void mb_devmem_sampler_window(struct mb_devmem_sampler *s, bool open);

/* Start the peak anew (0: none). */
void mb_devmem_sampler_reset(struct mb_devmem_sampler *s);

/* The peak of the readings in the window so far; 0 if none was taken. */
uint64_t mb_devmem_sampler_peak(struct mb_devmem_sampler *s);

/* Stop and join the thread (a sampler never started is fine). */
void mb_devmem_sampler_stop(struct mb_devmem_sampler *s);

#endif
