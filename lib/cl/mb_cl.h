/*
 * mb_cl: the OpenCL device muonbench runs on: listing and choosing devices,
 * the context with its two in-order profiling queues (compute and copy), the
 * program built from the embedded kernels/ sources, and errors that name the
 * call, the device and the shape.
 */
#ifndef MB_CL_H
#define MB_CL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_device.h"
#include "mb_words.h"

/*
 * Intel's GPU driver caps a buffer at CL_DEVICE_MAX_MEM_ALLOC_SIZE (4 GiB
 * less 8 KiB before PVC and Arc B) unless it is made with this flag (not in
 * Khronos' headers; compute-runtime's cl_ext_private.h) and the kernels that
 * use it are built with MB_CL_INTEL_STATELESS. No extension string says so:
 * it is Intel's GPUs (vendor id 0x8086) that take it.
 */
#define MB_CL_MEM_ALLOW_UNRESTRICTED_SIZE_INTEL (1u << 23)
#define MB_CL_INTEL_STATELESS			"-cl-intel-greater-than-4GB-buffer-required"

/* The flags of a read-write device buffer of BYTES on the device INFO describes. */
cl_mem_flags mb_cl_buffer_flags(const struct mb_cl_device_info *info, uint64_t bytes);

/* The largest buffer the device makes: unbounded where unrestricted_size. */
uint64_t mb_cl_alloc_limit(const struct mb_cl_device_info *info);

/*
 * The LLVM CPU in the name of a PoCL device, "pthread-skylake-avx512-AMD EPYC"
 * -> "skylake-avx512", into ARCH (LEN bytes); "" when NAME has none.
 */
void mb_cl_pocl_cpu(const char *name, char *arch, size_t len);

/*
 * A PCI address as sysfs names it, "0000:3b:00.0", into BUF (LEN bytes; 17
 * hold any): the domain's 32 bits in full ("10000:e1:00.0" behind Intel's
 * VMD), at least four hex digits. An address that LEN cannot hold whole is
 * false with BUF empty: never a cut one.
 */
bool mb_cl_pci_format(char *buf, size_t len, uint32_t domain, unsigned bus, unsigned dev,
		      unsigned fn);

/* "CL_OUT_OF_RESOURCES" for -5; "CL status -9999" for an unknown code. */
const char *mb_cl_strerror(cl_int status);

/*
 * Every device of every platform, into a new array *out of *n entries (the
 * caller frees it). No platform at all is -MB_EINPUT, saying what to install;
 * a failing query is -MB_EFAIL naming the call and the device.
 */
int mb_cl_list_devices(struct mb_cl_device_info **out, size_t *n);

/* Which device: --platform P, --device D (an index) or --device NAME-PART. */
struct mb_cl_select {
	int platform;	    /* -1: not given (platform 0 for a device index, else all) */
	const char *device; /* NULL: the first GPU, else the first device; the NTH of them */
	unsigned nth;	    /* a rank's local rank: the NTH GPU, modulo their number */
};

/*
 * The device SEL names, into *info, without opening it. A selection that
 * matches nothing is -MB_EINPUT listing what exists.
 */
int mb_cl_find(const struct mb_cl_select *sel, struct mb_cl_device_info *info);

/*
 * Why no device was found where the platforms list none: -MB_EINPUT, "no
 * OpenCL device found", and where PoCL cannot make its kernel cache (it then
 * lists no device), that, naming the directory and why.
 */
int mb_cl_no_device(void);

extern const char *const mb_pinned_alloc_names[MB_NPINNED_ALLOCS];

struct mb_cl {
	struct mb_cl_device_info info;
	cl_platform_id platform;
	cl_device_id device;
	cl_context context;
	cl_command_queue compute, copy; /* in order; profiling on unless MUONBENCH_PROFILING=off */
	cl_command_queue prefetch;	/* the second copy queue: pipeline's next-batch gathers */
	cl_program program;		/* every kernel source, built once */
	cl_kernel fill;			/* fill_span, for mb_cl_fill */
	size_t fill_local;
	enum mb_pinned_alloc pinned_alloc; /* ALLOC_HOST_PTR or NV once open, never AUTO */
	void *create_buffer_nv;		   /* clCreateBufferNV, where the platform has it */
	char tuning[4096]; /* CLBlast's parameters in force: "default", or the tuning's source */
	char tuning_match[16]; /* how it was chosen (mb_tuning_match_names); "none": default */
	char tuning_why[1024]; /* for people */
	char ns_gemm[256];     /* the tuning's ns_gemm tiles (mb_gemm16_classes); "": none */
	/* CLBlast kernels the tuning set: 0 where it holds ns_gemm alone (CLBlast's defaults) */
	size_t tuning_kernels;
};

/*
 * Choose the device SEL names, create the context and queues and build the
 * program. A selection that matches nothing is -MB_EINPUT listing what
 * exists; a build failure is -MB_EFAIL with the build log. On failure
 * nothing is left to release.
 */
int mb_cl_open(struct mb_cl *cl, const struct mb_cl_select *sel);

void mb_cl_release(struct mb_cl *cl);

/* NVIDIA's status for a kernel's illegal address: the context is lost (no name in Khronos'). */
#define MB_CL_NV_ILLEGAL_ADDRESS (-9999)

/*
 * Whether CL's device still takes work: every queue finished, checked. A
 * queue that cannot finish is -MB_EFAIL of kind MB_KIND_DEVICE_LOST (a
 * fault may surface at any later call, and a CL_OUT_OF_RESOURCES may be
 * memory or a fault: this tells them apart). Blocks while the device works.
 */
int mb_cl_alive(const struct mb_cl *cl);

/*
 * 0 if STATUS is CL_SUCCESS; otherwise record "CALL failed on 'DEVICE'
 * (WHAT): CL_..." and return -MB_EFAIL. WHAT (printf-style) names the shape.
 * The error's kind (mb_err_kind) is MB_KIND_DEVICE_MEMORY for
 * CL_MEM_OBJECT_ALLOCATION_FAILURE and CL_OUT_OF_RESOURCES (which some
 * drivers return when out of device memory), MB_KIND_HOST_MEMORY for
 * CL_OUT_OF_HOST_MEMORY, MB_KIND_DEVICE_LOST for a faulted command
 * (MB_CL_NV_ILLEGAL_ADDRESS, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
 * and for the dead queue or context after one (CL_INVALID_COMMAND_QUEUE,
 * CL_INVALID_CONTEXT), else MB_KIND_OTHER.
 */
int mb_cl_check(const struct mb_cl *cl, cl_int status, const char *call, const char *what, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * The same for a CLBlast status ("CLBlastInsufficientMemoryTemp"). CLBlast
 * returns OpenCL's codes as they are, and they have the same kinds; its own
 * CLBlastInsufficientMemory* codes say that a buffer given to it is too
 * small for the shape (the caller's mistake), so they are MB_KIND_OTHER.
 */
int mb_clblast_check(const struct mb_cl *cl, int status, const char *call, const char *what, ...)
	__attribute__((format(printf, 4, 5)));

/* "CLBlastInsufficientMemoryTemp" for -2050; OpenCL's names for shared codes. */
const char *mb_clblast_strerror(int status);

/*
 * The START and END of event EV on the device's clock, in seconds, into
 * *start and *end. A driver that cannot say (a status other than CL_SUCCESS,
 * such as CL_PROFILING_INFO_NOT_AVAILABLE) or says nothing (a 0, or END
 * before START) is -MB_EFAIL naming WHAT: a time that cannot be had is never
 * read as 0.
 */
int mb_cl_event_span(const struct mb_cl *cl, cl_event ev, const char *what, double *start,
		     double *end);

/*
 * The device time from the START of FIRST to the END of LAST (the same event
 * when one command is timed), in seconds, into *seconds: each read as
 * mb_cl_event_span reads it, and a LAST that ends before FIRST starts
 * refused too. On failure *seconds is NaN.
 */
int mb_cl_event_interval(const struct mb_cl *cl, cl_event first, cl_event last, const char *what,
			 double *seconds);

#define MB_CL_LOCAL_MAX 256 /* work-items of a work-group, at most */

/*
 * The work-group shape of KERNEL (NAME, for the error) over DIMS (1 or 2)
 * dimensions, into LOCAL[0 .. DIMS): mb_cl_local_shape of the kernel's
 * CL_KERNEL_WORK_GROUP_SIZE, the device's CL_DEVICE_MAX_WORK_GROUP_SIZE and
 * CL_DEVICE_MAX_WORK_ITEM_SIZES. Every NDRange of ours gives its local size
 * (a driver's own choice may be 1 for a size with no good divisor) and a
 * global size rounded up to a multiple of it; the kernels skip the padding.
 */
int mb_cl_local_size(const struct mb_cl *cl, cl_kernel kernel, const char *name, cl_uint dims,
		     size_t *local);

/*
 * Pure: at most LIMIT and MB_CL_LOCAL_MAX work-items, a power of two in each
 * dimension, each within ITEM_MAX[i]; in 2-D square or twice as wide as
 * high (256: 16 x 16).
 */
void mb_cl_local_shape(size_t limit, const size_t *item_max, cl_uint dims, size_t *local);

/* N rounded up to a multiple of MULTIPLE (> 0). */
size_t mb_cl_round_up(size_t n, size_t multiple);

/*
 * Make pinned host memory as ASKED from now on: AUTO is NV where the
 * platform has clCreateBufferNV, else ALLOC_HOST_PTR (what mb_cl_open
 * chose); NV where it has not is -MB_EINPUT.
 */
int mb_cl_pinned_choose(struct mb_cl *cl, enum mb_pinned_alloc asked);

/*
 * A read-write buffer of BYTES in pinned host memory, made as
 * CL->pinned_alloc says (map it for its host address); on failure NULL,
 * the status in *ST and the call's name in *CALL.
 */
cl_mem mb_cl_create_pinned(const struct mb_cl *cl, size_t bytes, cl_int *st, const char **call);

/*
 * Enqueue on Q the 32-bit PATTERN over BYTES of BUF from byte OFF, with a
 * kernel of ours indexed in 64 bits (kernels/fill.cl), never
 * clEnqueueFillBuffer, which NVIDIA's driver fails or hangs on past 2^31
 * bytes. OFF and BYTES must be multiples of 4 unless PATTERN is 0 (any
 * span). WHAT names the span in the error. Not thread-safe on one CL (the
 * kernel's arguments are shared).
 */
int mb_cl_fill(const struct mb_cl *cl, cl_command_queue q, cl_mem buf, uint64_t off, uint64_t bytes,
	       uint32_t pattern, const char *what);

/* mb_cl_fill of zeros. */
int mb_cl_zero(const struct mb_cl *cl, cl_command_queue q, cl_mem buf, uint64_t off, uint64_t bytes,
	       const char *what);

/* Create kernel NAME of the program into *out (release with clReleaseKernel). */
int mb_cl_kernel(const struct mb_cl *cl, const char *name, cl_kernel *out);

#endif
