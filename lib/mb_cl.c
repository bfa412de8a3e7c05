/*
 * mb_cl: enumerating OpenCL devices and naming OpenCL status codes.
 */
#include "mb_cl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"

#define PLATFORMS_MAX 16
#define DEVICES_MAX   64

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

const char *mb_cl_strerror(cl_int status)
{
	static _Thread_local char unknown[32];

	switch (status) {
#define NAME(code) \
	case code: \
		return #code
		NAME(CL_SUCCESS);
		NAME(CL_DEVICE_NOT_FOUND);
		NAME(CL_DEVICE_NOT_AVAILABLE);
		NAME(CL_COMPILER_NOT_AVAILABLE);
		NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE);
		NAME(CL_OUT_OF_RESOURCES);
		NAME(CL_OUT_OF_HOST_MEMORY);
		NAME(CL_PROFILING_INFO_NOT_AVAILABLE);
		NAME(CL_MEM_COPY_OVERLAP);
		NAME(CL_IMAGE_FORMAT_MISMATCH);
		NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED);
		NAME(CL_BUILD_PROGRAM_FAILURE);
		NAME(CL_MAP_FAILURE);
		NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET);
		NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
		NAME(CL_COMPILE_PROGRAM_FAILURE);
		NAME(CL_LINKER_NOT_AVAILABLE);
		NAME(CL_LINK_PROGRAM_FAILURE);
		NAME(CL_DEVICE_PARTITION_FAILED);
		NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
		NAME(CL_INVALID_VALUE);
		NAME(CL_INVALID_DEVICE_TYPE);
		NAME(CL_INVALID_PLATFORM);
		NAME(CL_INVALID_DEVICE);
		NAME(CL_INVALID_CONTEXT);
		NAME(CL_INVALID_QUEUE_PROPERTIES);
		NAME(CL_INVALID_COMMAND_QUEUE);
		NAME(CL_INVALID_HOST_PTR);
		NAME(CL_INVALID_MEM_OBJECT);
		NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
		NAME(CL_INVALID_IMAGE_SIZE);
		NAME(CL_INVALID_SAMPLER);
		NAME(CL_INVALID_BINARY);
		NAME(CL_INVALID_BUILD_OPTIONS);
		NAME(CL_INVALID_PROGRAM);
		NAME(CL_INVALID_PROGRAM_EXECUTABLE);
		NAME(CL_INVALID_KERNEL_NAME);
		NAME(CL_INVALID_KERNEL_DEFINITION);
		NAME(CL_INVALID_KERNEL);
		NAME(CL_INVALID_ARG_INDEX);
		NAME(CL_INVALID_ARG_VALUE);
		NAME(CL_INVALID_ARG_SIZE);
		NAME(CL_INVALID_KERNEL_ARGS);
		NAME(CL_INVALID_WORK_DIMENSION);
		NAME(CL_INVALID_WORK_GROUP_SIZE);
		NAME(CL_INVALID_WORK_ITEM_SIZE);
		NAME(CL_INVALID_GLOBAL_OFFSET);
		NAME(CL_INVALID_EVENT_WAIT_LIST);
		NAME(CL_INVALID_EVENT);
		NAME(CL_INVALID_OPERATION);
		NAME(CL_INVALID_GL_OBJECT);
		NAME(CL_INVALID_BUFFER_SIZE);
		NAME(CL_INVALID_MIP_LEVEL);
		NAME(CL_INVALID_GLOBAL_WORK_SIZE);
		NAME(CL_INVALID_PROPERTY);
		NAME(CL_INVALID_IMAGE_DESCRIPTOR);
		NAME(CL_INVALID_COMPILER_OPTIONS);
		NAME(CL_INVALID_LINKER_OPTIONS);
		NAME(CL_INVALID_DEVICE_PARTITION_COUNT);
		NAME(CL_PLATFORM_NOT_FOUND_KHR);
#undef NAME
	}
	snprintf(unknown, sizeof(unknown), "CL status %d", (int)status);
	return unknown;
}

static int device_info(cl_device_id id, const char *what, cl_device_info param, void *value,
		       size_t size)
{
	cl_int st = clGetDeviceInfo(id, param, size, value, NULL);

	if (st != CL_SUCCESS)
		return mb_fail("clGetDeviceInfo(%s) failed: %s", what, mb_cl_strerror(st));
	return 0;
}

static int describe(cl_device_id id, struct mb_cl_device_info *d)
{
	char ext[8192] = "";
	cl_device_type type;
	cl_ulong mem, alloc;
	cl_uint units;
	int err;

	if ((err = device_info(id, "CL_DEVICE_NAME", CL_DEVICE_NAME, d->name,
			       sizeof(d->name) - 1)) ||
	    (err = device_info(id, "CL_DEVICE_VENDOR", CL_DEVICE_VENDOR, d->vendor,
			       sizeof(d->vendor) - 1)) ||
	    (err = device_info(id, "CL_DRIVER_VERSION", CL_DRIVER_VERSION, d->driver,
			       sizeof(d->driver) - 1)) ||
	    (err = device_info(id, "CL_DEVICE_VERSION", CL_DEVICE_VERSION, d->version,
			       sizeof(d->version) - 1)) ||
	    (err = device_info(id, "CL_DEVICE_TYPE", CL_DEVICE_TYPE, &type, sizeof(type))) ||
	    (err = device_info(id, "CL_DEVICE_GLOBAL_MEM_SIZE", CL_DEVICE_GLOBAL_MEM_SIZE, &mem,
			       sizeof(mem))) ||
	    (err = device_info(id, "CL_DEVICE_MAX_MEM_ALLOC_SIZE", CL_DEVICE_MAX_MEM_ALLOC_SIZE,
			       &alloc, sizeof(alloc))) ||
	    (err = device_info(id, "CL_DEVICE_MAX_COMPUTE_UNITS", CL_DEVICE_MAX_COMPUTE_UNITS,
			       &units, sizeof(units))))
		return err;
	/* a list longer than the buffer is truncated, not an error */
	clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, sizeof(ext) - 1, ext, NULL);
	d->type = type & CL_DEVICE_TYPE_GPU	      ? "GPU"
		  : type & CL_DEVICE_TYPE_CPU	      ? "CPU"
		  : type & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator"
						      : "other";
	d->global_mem_bytes = mem;
	d->max_alloc_bytes = alloc;
	d->compute_units = units;
	d->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
	return 0;
}

static int list_platform(cl_platform_id pid, unsigned pi, struct mb_cl_device_info *out, size_t *n)
{
	cl_device_id ids[DEVICES_MAX];
	char pname[128] = "";
	cl_uint count = 0, di;
	cl_int st;
	int err;

	clGetPlatformInfo(pid, CL_PLATFORM_NAME, sizeof(pname) - 1, pname, NULL);
	st = clGetDeviceIDs(pid, CL_DEVICE_TYPE_ALL, DEVICES_MAX, ids, &count);
	if (st == CL_DEVICE_NOT_FOUND)
		return 0;
	if (st != CL_SUCCESS)
		return mb_fail("clGetDeviceIDs failed on platform %u '%s': %s", pi, pname,
			       mb_cl_strerror(st));
	for (di = 0; di < count && di < DEVICES_MAX; di++) {
		struct mb_cl_device_info *d = &out[(*n)++];

		memset(d, 0, sizeof(*d));
		d->platform = pi;
		d->device = di;
		snprintf(d->platform_name, sizeof(d->platform_name), "%s", pname);
		if ((err = describe(ids[di], d))) {
			mb_err_prefix("platform %u device %u", pi, di);
			return err;
		}
	}
	return 0;
}

int mb_cl_list_devices(struct mb_cl_device_info **out, size_t *n)
{
	cl_platform_id pids[PLATFORMS_MAX];
	struct mb_cl_device_info *devs;
	cl_uint np = 0, pi;
	cl_int st;
	int err = 0;

	*out = NULL;
	*n = 0;
	st = clGetPlatformIDs(PLATFORMS_MAX, pids, &np);
	if (st == CL_PLATFORM_NOT_FOUND_KHR || (st == CL_SUCCESS && !np))
		return mb_bad_input("no OpenCL platform found: install an OpenCL driver (on "
				    "Debian, pocl-opencl-icd for the CPU, or your GPU vendor's "
				    "ICD)");
	if (st != CL_SUCCESS)
		return mb_fail("clGetPlatformIDs failed: %s", mb_cl_strerror(st));
	if (np > PLATFORMS_MAX)
		np = PLATFORMS_MAX;
	devs = calloc((size_t)np * DEVICES_MAX, sizeof(*devs));
	if (!devs)
		return mb_fail("out of host memory listing OpenCL devices");
	for (pi = 0; pi < np && !err; pi++)
		err = list_platform(pids[pi], pi, devs, n);
	if (err) {
		free(devs);
		*n = 0;
		return err;
	}
	*out = devs;
	return 0;
}
