/*
 * mb_device: what lib/ outside lib/cl/ knows of an OpenCL device, in plain
 * C: its description (as mb_cl reads it from the driver), where its used
 * memory comes from (mb_devmem's sources), how pinned host memory is made,
 * and whether it also takes device memory. The results, the tuning files and the profiles
 * are keyed and worded by these.
 */
#ifndef MB_DEVICE_H
#define MB_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "mb_words.h"

/* A device as its driver describes it (mb_cl_devices reads it). */
struct mb_cl_device_info {
	unsigned platform, device; /* indices, as --platform and --device take them */
	char platform_name[128];
	char name[128], vendor[128], driver[64], version[128];
	const char *type; /* "GPU", "CPU", "accelerator" or "other" */
	char arch[64];	  /* "haswell" (PoCL's LLVM CPU), "sm_90", "gfx90a"; empty if unknown */
	uint64_t global_mem_bytes, max_alloc_bytes;
	bool unrestricted_size; /* Intel's GPU driver: a buffer may pass max_alloc_bytes (below) */
	unsigned compute_units;
	bool fp16;     /* cl_khr_fp16 */
	char pci[20];  /* "0000:3b:00.0", "10000:01:00.0"; empty when the driver does not say */
	int numa_node; /* of the PCI device, from sysfs; -1 when unknown */
};

/* Where the device's used memory is read from (mb_devmem; a list, mb_words.h). */
#define MB_DEVMEM_SOURCES(X, SEP) X(NONE, "none") SEP X(NVML, "nvml") SEP X(AMD, "amd")
#define MB_DEVMEM_ENUM_(e, ...)	  MB_DEVMEM_##e,
enum mb_devmem_source { MB_DEVMEM_SOURCES(MB_DEVMEM_ENUM_, ) MB_NDEVMEM_SOURCES };

/* Whether pinned host memory also takes device memory (a list, mb_words.h). */
#define MB_PINNED_COPIES(X, SEP)     X(UNKNOWN, "unknown") SEP X(YES, "yes") SEP X(NO, "no")
#define MB_PINNED_COPY_ENUM_(e, ...) MB_PINNED_COPY_##e,
enum mb_pinned_copy { MB_PINNED_COPIES(MB_PINNED_COPY_ENUM_, ) MB_NPINNED_COPIES };

/*
 * How pinned host memory is made (a list, mb_words.h): auto, the best the
 * platform has; a mapped CL_MEM_ALLOC_HOST_PTR buffer, which every driver
 * pins but NVIDIA's also copies into device memory, byte for byte; or
 * NVIDIA's clCreateBufferNV (cl_nv_create_buffer) with CL_MEM_LOCATION_HOST_NV
 * and CL_MEM_PINNED_NV, which pins as the CUDA runtime does (2 GiB: +2 MiB
 * on an H200, where ALLOC_HOST_PTR took +2050 MiB, both at 55 GB/s).
 */
#define MB_PINNED_ALLOCS(X, SEP) \
	X(AUTO, "auto") SEP X(ALLOC_HOST_PTR, "alloc-host-ptr") SEP X(NV, "nv")
#define MB_PINNED_ENUM_(e, ...) MB_PINNED_##e,
enum mb_pinned_alloc { MB_PINNED_ALLOCS(MB_PINNED_ENUM_, ) MB_NPINNED_ALLOCS };

#endif
