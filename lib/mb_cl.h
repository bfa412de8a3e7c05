/*
 * mb_cl: the OpenCL platforms and devices of this machine, and the names of
 * OpenCL's status codes.
 */
#ifndef MB_CL_H
#define MB_CL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mb_cl_device_info {
	unsigned platform, device; /* indices, as --platform and --device take them */
	char platform_name[128];
	char name[128], vendor[128], driver[64], version[128];
	const char *type; /* "GPU", "CPU", "accelerator" or "other" */
	uint64_t global_mem_bytes, max_alloc_bytes;
	unsigned compute_units;
	bool fp16; /* cl_khr_fp16 */
};

/* "CL_OUT_OF_RESOURCES" for -5; "CL status -9999" for an unknown code. */
const char *mb_cl_strerror(cl_int status);

/*
 * Every device of every platform, into a new array *out of *n entries (the
 * caller frees it). No platform at all is -MB_EINPUT, saying what to install;
 * a failing query is -MB_EFAIL naming the call and the device.
 */
int mb_cl_list_devices(struct mb_cl_device_info **out, size_t *n);

#endif
