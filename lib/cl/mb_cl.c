/*
 * mb_cl: OpenCL devices, the context and queues, the program, and errors.
 */
#include "mb_cl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <clblast_c.h>

#include "mb_embedded.h"
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

/*
 * A string property of a device (PLATFORM NULL) or of a platform, however
 * long, into a new string *out (the caller frees it).
 */
static int info_string(cl_device_id dev, cl_platform_id platform, cl_uint param, const char *what,
		       char **out)
{
	size_t size = 0;
	cl_int st;

	st = dev ? clGetDeviceInfo(dev, param, 0, NULL, &size)
		 : clGetPlatformInfo(platform, param, 0, NULL, &size);
	*out = st == CL_SUCCESS ? calloc(size + 1, 1) : NULL;
	if (st == CL_SUCCESS && !*out)
		return mb_fail("out of host memory for %s", what);
	if (st == CL_SUCCESS)
		st = dev ? clGetDeviceInfo(dev, param, size, *out, NULL)
			 : clGetPlatformInfo(platform, param, size, *out, NULL);
	if (st != CL_SUCCESS) {
		free(*out);
		*out = NULL;
		return mb_fail("%s(%s) failed: %s", dev ? "clGetDeviceInfo" : "clGetPlatformInfo",
			       what, mb_cl_strerror(st));
	}
	return 0;
}

/* A string property of DEV into BUF (LEN bytes), cut short if longer. */
static int device_string(cl_device_id dev, cl_device_info param, const char *what, char *buf,
			 size_t len)
{
	char *s;
	int err;

	if ((err = info_string(dev, NULL, param, what, &s)))
		return err;
	snprintf(buf, len, "%s", s);
	free(s);
	return 0;
}

#define CL_DEVICE_PCI_BUS_INFO_KHR	 0x410F
#define CL_DEVICE_PCI_BUS_ID_NV		 0x4008
#define CL_DEVICE_PCI_SLOT_ID_NV	 0x4009
#define CL_DEVICE_PCI_DOMAIN_ID_NV	 0x400A
#define CL_DEVICE_TOPOLOGY_AMD		 0x4037
#define CL_DEVICE_TOPOLOGY_TYPE_PCIE_AMD 1

bool mb_cl_pci_format(char *buf, size_t len, uint32_t domain, unsigned bus, unsigned dev,
		      unsigned fn)
{
	/* as Linux names the device in sysfs: the domain in full (VMD's are
	 * 0x10000 and up), at least four digits */
	int n = snprintf(buf, len, "%04x:%02x:%02x.%x", domain, bus & 0xff, dev & 0x1f, fn & 7);

	if (n >= 0 && (size_t)n < len)
		return true;
	if (len)
		buf[0] = '\0';
	return false;
}

/*
 * The device's PCI address, from cl_khr_pci_bus_info or else the vendor's
 * query (NVIDIA's bus and slot ids, AMD's topology), and the NUMA node that
 * sysfs gives that address. Both stay unknown where neither is offered. The
 * KHR query is tried whatever the extension string says, as hwloc does:
 * drivers answer it without listing it; its answer counts only when the call
 * succeeds with the whole structure.
 */
static void pci_location(cl_device_id id, const char *ext, struct mb_cl_device_info *d)
{
	cl_uint dom = 0, bus = 0, dev = 0, fn = 0, v[4] = { 0 };
	size_t got = 0;
	char path[96];
	bool found = false;
	FILE *f;

	if (clGetDeviceInfo(id, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof(v), v, &got) == CL_SUCCESS &&
	    got == sizeof(v)) {
		dom = v[0], bus = v[1], dev = v[2], fn = v[3];
		found = true;
	} else if (strstr(ext, "cl_nv_device_attribute_query") &&
		   !clGetDeviceInfo(id, CL_DEVICE_PCI_BUS_ID_NV, sizeof(bus), &bus, NULL) &&
		   !clGetDeviceInfo(id, CL_DEVICE_PCI_SLOT_ID_NV, sizeof(dev), &dev, NULL)) {
		if (clGetDeviceInfo(id, CL_DEVICE_PCI_DOMAIN_ID_NV, sizeof(dom), &dom, NULL))
			dom = 0;
		fn = dev & 7;
		dev >>= 3;
		found = true;
	} else if (strstr(ext, "cl_amd_device_attribute_query")) {
		union {
			struct {
				cl_uint type;
				cl_uint data[5];
			} raw;
			struct {
				cl_uint type;
				cl_char unused[17];
				cl_char bus, device, function;
			} pcie;
		} t;

		if (!clGetDeviceInfo(id, CL_DEVICE_TOPOLOGY_AMD, sizeof(t), &t, NULL) &&
		    t.raw.type == CL_DEVICE_TOPOLOGY_TYPE_PCIE_AMD) {
			bus = (cl_uchar)t.pcie.bus, dev = (cl_uchar)t.pcie.device;
			fn = (cl_uchar)t.pcie.function;
			found = true;
		}
	}
	d->numa_node = -1;
	if (!found)
		return;
	if (!mb_cl_pci_format(d->pci, sizeof(d->pci), dom, bus, dev, fn))
		return;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", d->pci);
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%d", &d->numa_node) != 1)
			d->numa_node = -1;
		fclose(f);
	}
}

void mb_cl_pocl_cpu(const char *name, char *arch, size_t len)
{
	const char *start = strchr(name, '-'), *p, *end = NULL;

	/*
	 * After the driver ("pthread-", "cpu-"), the words of lowercase letters
	 * and digits; the CPU's model name ("AMD EPYC") ends them.
	 */
	snprintf(arch, len, "%s", "");
	if (!start)
		return;
	for (p = start + 1; *p; p++)
		if (*p == '-')
			end = p;
		else if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_.", *p))
			break;
	if (!*p && p > start + 1)
		end = p;
	if (end && end > start + 1)
		snprintf(arch, len, "%.*s", (int)(end - start - 1), start + 1);
}

#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001

/*
 * The device's architecture, as CLBlast's database tells devices apart: the
 * LLVM CPU of a PoCL device, NVIDIA's compute capability, AMD's gfx name.
 */
static void architecture(cl_device_id id, const char *ext, struct mb_cl_device_info *d)
{
	cl_uint major, minor;

	if (!strcmp(d->platform_name, "Portable Computing Language"))
		mb_cl_pocl_cpu(d->name, d->arch, sizeof(d->arch));
	else if (strstr(ext, "cl_nv_device_attribute_query") &&
		 !clGetDeviceInfo(id, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof(major), &major,
				  NULL) &&
		 !clGetDeviceInfo(id, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof(minor), &minor,
				  NULL))
		snprintf(d->arch, sizeof(d->arch), "sm_%u%u", major, minor);
	else if (!strncmp(d->name, "gfx", 3))
		snprintf(d->arch, sizeof(d->arch), "%.63s", d->name);
}

static int describe(cl_device_id id, struct mb_cl_device_info *d)
{
	char *ext = NULL;
	cl_device_type type;
	cl_ulong mem, alloc;
	cl_uint units, vendor_id;
	int err;

	if ((err = device_string(id, CL_DEVICE_NAME, "CL_DEVICE_NAME", d->name, sizeof(d->name))) ||
	    (err = device_string(id, CL_DEVICE_VENDOR, "CL_DEVICE_VENDOR", d->vendor,
				 sizeof(d->vendor))) ||
	    (err = device_string(id, CL_DRIVER_VERSION, "CL_DRIVER_VERSION", d->driver,
				 sizeof(d->driver))) ||
	    (err = device_string(id, CL_DEVICE_VERSION, "CL_DEVICE_VERSION", d->version,
				 sizeof(d->version))) ||
	    (err = device_info(id, "CL_DEVICE_TYPE", CL_DEVICE_TYPE, &type, sizeof(type))) ||
	    (err = device_info(id, "CL_DEVICE_GLOBAL_MEM_SIZE", CL_DEVICE_GLOBAL_MEM_SIZE, &mem,
			       sizeof(mem))) ||
	    (err = device_info(id, "CL_DEVICE_MAX_MEM_ALLOC_SIZE", CL_DEVICE_MAX_MEM_ALLOC_SIZE,
			       &alloc, sizeof(alloc))) ||
	    (err = device_info(id, "CL_DEVICE_MAX_COMPUTE_UNITS", CL_DEVICE_MAX_COMPUTE_UNITS,
			       &units, sizeof(units))) ||
	    (err = device_info(id, "CL_DEVICE_VENDOR_ID", CL_DEVICE_VENDOR_ID, &vendor_id,
			       sizeof(vendor_id))) ||
	    (err = info_string(id, NULL, CL_DEVICE_EXTENSIONS, "CL_DEVICE_EXTENSIONS", &ext)))
		return err;
	d->type = type & CL_DEVICE_TYPE_GPU	      ? "GPU"
		  : type & CL_DEVICE_TYPE_CPU	      ? "CPU"
		  : type & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator"
						      : "other";
	d->global_mem_bytes = mem;
	d->max_alloc_bytes = alloc;
	d->compute_units = units;
	d->unrestricted_size = vendor_id == 0x8086 && (type & CL_DEVICE_TYPE_GPU);
	d->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
	pci_location(id, ext, d);
	architecture(id, ext, d);
	free(ext);
	return 0;
}

static int list_platform(cl_platform_id pid, unsigned pi, struct mb_cl_device_info *out, size_t *n)
{
	cl_device_id ids[DEVICES_MAX];
	cl_uint count = 0, di;
	char *pname;
	cl_int st;
	int err;

	if ((err = info_string(NULL, pid, CL_PLATFORM_NAME, "CL_PLATFORM_NAME", &pname)))
		return err;
	st = clGetDeviceIDs(pid, CL_DEVICE_TYPE_ALL, DEVICES_MAX, ids, &count);
	if (st != CL_SUCCESS && st != CL_DEVICE_NOT_FOUND)
		err = mb_fail("clGetDeviceIDs failed on platform %u '%s': %s", pi, pname,
			      mb_cl_strerror(st));
	for (di = 0; st == CL_SUCCESS && !err && di < count && di < DEVICES_MAX; di++) {
		struct mb_cl_device_info *d = &out[(*n)++];

		memset(d, 0, sizeof(*d));
		d->platform = pi;
		d->device = di;
		snprintf(d->platform_name, sizeof(d->platform_name), "%s", pname);
		if ((err = describe(ids[di], d)))
			mb_err_prefix("platform %u device %u", pi, di);
	}
	free(pname);
	return err;
}

/*
 * Why the loader found no platform: the first ICD file in its vendors
 * directory (OCL_ICD_VENDORS, else /etc/OpenCL/vendors) whose library cannot
 * be loaded, or that no ICD is registered at all.
 */
static int no_platform(void)
{
	const char *env = getenv("OCL_ICD_VENDORS"),
		   *dir = env && *env ? env : "/etc/OpenCL/vendors";
	char path[4096], lib[4096] = "";
	struct dirent *e;
	size_t len;
	FILE *f;
	void *h;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".icd"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (!fgets(lib, sizeof(lib), f))
			lib[0] = '\0';
		fclose(f);
		lib[strcspn(lib, "\r\n")] = '\0';
		if (!(h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL))) {
			closedir(d);
			return mb_bad_input("no OpenCL platform found: the ICD '%s' names '%s', "
					    "which cannot be loaded (%s)",
					    path, lib, dlerror());
		}
		dlclose(h);
	}
	if (d)
		closedir(d);
	return mb_bad_input("no OpenCL platform found%s%s%s: install an OpenCL driver (on "
			    "Debian, pocl-opencl-icd for the CPU, or your GPU vendor's ICD)",
			    lib[0] ? "" : " (no ICD in '", lib[0] ? "" : dir, lib[0] ? "" : "')");
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
		return no_platform();
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

/*
 * PoCL's kernel cache, as PoCL finds it (POCL_CACHE_DIR, else
 * $XDG_CACHE_HOME/pocl/kcache, else $HOME/.cache/pocl/kcache), made where
 * it is not yet, as PoCL would; false with WHY where it cannot be: PoCL then
 * lists no device at all.
 */
static bool pocl_cache_made(char *why, size_t len)
{
	const char *dir = getenv("POCL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
		   *home = getenv("HOME");
	char path[4096], *slash;

	if (dir && *dir)
		snprintf(path, sizeof(path), "%s/", dir);
	else if (xdg && *xdg)
		snprintf(path, sizeof(path), "%s/pocl/kcache/", xdg);
	else if (home && *home)
		snprintf(path, sizeof(path), "%s/.cache/pocl/kcache/", home);
	else
		return true; /* PoCL has its own place then */
	for (slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			snprintf(why, len, "'%s': %s", path, strerror(errno));
			return false;
		}
		*slash = '/';
	}
	return true;
}

int mb_cl_no_device(void)
{
	cl_platform_id pids[PLATFORMS_MAX];
	cl_uint np = 0, pi;
	char why[4200], *name;

	if (clGetPlatformIDs(PLATFORMS_MAX, pids, &np) != CL_SUCCESS)
		np = 0;
	for (pi = 0; pi < np && pi < PLATFORMS_MAX; pi++) {
		if (info_string(NULL, pids[pi], CL_PLATFORM_NAME, "CL_PLATFORM_NAME", &name))
			continue;
		if (strstr(name, "Portable Computing Language") &&
		    !pocl_cache_made(why, sizeof(why))) {
			free(name);
			return mb_bad_input(
				"no OpenCL device found: PoCL (platform %u) lists none, as "
				"it cannot make its kernel cache %s (set POCL_CACHE_DIR, "
				"or XDG_CACHE_HOME or HOME, to a writable directory)",
				pi, why);
		}
		free(name);
	}
	return mb_bad_input("no OpenCL device found");
}

static bool on_platform(const struct mb_cl_device_info *d, int platform)
{
	return platform < 0 || d->platform == (unsigned)platform;
}

/* Whether NAME contains PART, ignoring case. */
static bool contains(const char *name, const char *part)
{
	size_t n = strlen(part);

	for (; *name; name++)
		if (!strncasecmp(name, part, n))
			return true;
	return false;
}

/* Index of the device SEL chooses among the N listed. */
static int choose(const struct mb_cl_device_info *d, size_t n, const struct mb_cl_select *sel,
		  size_t *out)
{
	const char *name = sel->device;
	int platform = sel->platform;
	size_t i, first = n;
	char *end;
	unsigned long index;

	for (i = n; i-- > 0;)
		if (on_platform(&d[i], platform))
			first = i;
	if (first == n)
		return mb_bad_input("--platform %d: no such platform with a device (see muonbench "
				    "devices)",
				    platform);
	*out = first;
	if (!name) { /* the GPUs in turn for the ranks of a node */
		size_t gpus = 0, k = 0;

		for (i = 0; i < n; i++)
			gpus += on_platform(&d[i], platform) && !strcmp(d[i].type, "GPU");
		for (i = 0; i < n && gpus; i++)
			if (on_platform(&d[i], platform) && !strcmp(d[i].type, "GPU") &&
			    k++ == sel->nth % gpus) {
				*out = i;
				break;
			}
		return 0;
	}
	index = strtoul(name, &end, 10);
	if (isdigit((unsigned char)*name) && !*end) {
		platform = platform < 0 ? 0 : platform;
		for (i = 0; i < n; i++)
			if (on_platform(&d[i], platform) && d[i].device == index) {
				*out = i;
				return 0;
			}
		return mb_bad_input("--device %s: platform %d has no device %s (see muonbench "
				    "devices)",
				    name, platform, name);
	}
	for (i = 0; i < n; i++)
		if (on_platform(&d[i], platform) && contains(d[i].name, name)) {
			*out = i;
			return 0;
		}
	return mb_bad_input("--device '%s': no device's name contains it (see muonbench devices)",
			    name);
}

static int find_ids(struct mb_cl *cl)
{
	cl_platform_id pids[PLATFORMS_MAX];
	cl_device_id dids[DEVICES_MAX];
	cl_uint np = 0, nd = 0;
	cl_int st;

	st = clGetPlatformIDs(PLATFORMS_MAX, pids, &np);
	if (st == CL_SUCCESS && cl->info.platform < np)
		st = clGetDeviceIDs(pids[cl->info.platform], CL_DEVICE_TYPE_ALL, DEVICES_MAX, dids,
				    &nd);
	if (st != CL_SUCCESS || cl->info.platform >= np || cl->info.device >= nd)
		return mb_fail("the OpenCL devices changed while muonbench looked at them");
	cl->platform = pids[cl->info.platform];
	cl->device = dids[cl->info.device];
	return 0;
}

static int build_program(struct mb_cl *cl)
{
	const char *sources[16];
	size_t lengths[16], n = 0, loglen = 0;
	const struct mb_embedded_file *f;
	char *log;
	cl_int st;

	for (f = mb_embedded_files; f->path && n < 16; f++) {
		/* ns_gemm.cl holds NVIDIA's PTX: mb_gemm16 builds it apart, per path */
		if (strncmp(f->path, "kernels/", 8) || !strcmp(f->path, "kernels/ns_gemm.cl"))
			continue;
		sources[n] = f->data;
		lengths[n++] = f->size;
	}
	cl->program = clCreateProgramWithSource(cl->context, (cl_uint)n, sources, lengths, &st);
	if (mb_cl_check(cl, st, "clCreateProgramWithSource", "%zu kernel files", n))
		return -MB_EFAIL;
	st = clBuildProgram(cl->program, 1, &cl->device,
			    cl->info.unrestricted_size ? MB_CL_INTEL_STATELESS : "", NULL, NULL);
	if (st == CL_SUCCESS)
		return 0;
	clGetProgramBuildInfo(cl->program, cl->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &loglen);
	log = calloc(loglen + 1, 1);
	if (log)
		clGetProgramBuildInfo(cl->program, cl->device, CL_PROGRAM_BUILD_LOG, loglen, log,
				      NULL);
	mb_fail("clBuildProgram failed on '%s' (kernels/*.cl): %s; build log:\n%s", cl->info.name,
		mb_cl_strerror(st), log ? log : "(none)");
	free(log);
	return -MB_EFAIL;
}

int mb_cl_find(const struct mb_cl_select *sel, struct mb_cl_device_info *info)
{
	struct mb_cl_device_info *devs;
	size_t n, i = 0;
	int err;

	if ((err = mb_cl_list_devices(&devs, &n)))
		return err;
	err = n ? choose(devs, n, sel, &i) : mb_cl_no_device();
	if (!err)
		*info = devs[i];
	free(devs);
	return err;
}

/*
 * On Intel's GPUs, CLBlast's kernels are built stateless too, so that they
 * may use buffers over 4 GiB: CLBlast adds CLBLAST_BUILD_OPTIONS to every
 * build, read before its first.
 */
static int stateless_clblast(const struct mb_cl *cl)
{
	const char *had = getenv("CLBLAST_BUILD_OPTIONS");
	char opts[1024];

	if (!cl->info.unrestricted_size || (had && strstr(had, MB_CL_INTEL_STATELESS)))
		return 0;
	snprintf(opts, sizeof(opts), "%s%s%s", had ? had : "", had && *had ? " " : "",
		 MB_CL_INTEL_STATELESS);
	if (setenv("CLBLAST_BUILD_OPTIONS", opts, 1))
		return mb_fail("cannot set CLBLAST_BUILD_OPTIONS for '%s'", cl->info.name);
	return 0;
}

cl_mem_flags mb_cl_buffer_flags(const struct mb_cl_device_info *info, uint64_t bytes)
{
	return CL_MEM_READ_WRITE | (info->unrestricted_size && bytes > info->max_alloc_bytes
					    ? (cl_mem_flags)MB_CL_MEM_ALLOW_UNRESTRICTED_SIZE_INTEL
					    : 0);
}

uint64_t mb_cl_alloc_limit(const struct mb_cl_device_info *info)
{
	return info->unrestricted_size ? UINT64_MAX : info->max_alloc_bytes;
}

int mb_cl_open(struct mb_cl *cl, const struct mb_cl_select *sel)
{
	const char *profiling = getenv("MUONBENCH_PROFILING");
	/* off: queues without profiling, so that every event's times are refused
	 * by the driver (the tests' way to see a timing that cannot be had) */
	cl_command_queue_properties props =
		profiling && !strcmp(profiling, "off") ? 0 : CL_QUEUE_PROFILING_ENABLE;
	cl_int st;
	int err;

	memset(cl, 0, sizeof(*cl));
	if ((err = mb_cl_find(sel, &cl->info)) || (err = find_ids(cl)))
		return err;
	snprintf(cl->tuning, sizeof(cl->tuning), "default");
	snprintf(cl->tuning_match, sizeof(cl->tuning_match), "none");
	cl->context = clCreateContext(NULL, 1, &cl->device, NULL, NULL, &st);
	if ((err = mb_cl_check(cl, st, "clCreateContext", "one device")))
		goto out_release;
	cl->compute = clCreateCommandQueue(cl->context, cl->device, props, &st);
	if ((err = mb_cl_check(cl, st, "clCreateCommandQueue", "compute queue")))
		goto out_release;
	cl->copy = clCreateCommandQueue(cl->context, cl->device, props, &st);
	if ((err = mb_cl_check(cl, st, "clCreateCommandQueue", "copy queue")))
		goto out_release;
	cl->prefetch = clCreateCommandQueue(cl->context, cl->device, props, &st);
	if ((err = mb_cl_check(cl, st, "clCreateCommandQueue", "prefetch queue")))
		goto out_release;
	*(void **)&cl->create_buffer_nv =
		clGetExtensionFunctionAddressForPlatform(cl->platform, "clCreateBufferNV");
	mb_cl_pinned_choose(cl, MB_PINNED_AUTO);
	if ((err = build_program(cl)) || (err = stateless_clblast(cl)) ||
	    (err = mb_cl_kernel(cl, "fill_span", &cl->fill)) ||
	    (err = mb_cl_local_size(cl, cl->fill, "fill_span", 1, &cl->fill_local)))
		goto out_release;
	return 0;

out_release:
	mb_cl_release(cl);
	return err;
}

void mb_cl_release(struct mb_cl *cl)
{
	if (cl->fill)
		clReleaseKernel(cl->fill);
	if (cl->program)
		clReleaseProgram(cl->program);
	if (cl->prefetch)
		clReleaseCommandQueue(cl->prefetch);
	if (cl->copy)
		clReleaseCommandQueue(cl->copy);
	if (cl->compute)
		clReleaseCommandQueue(cl->compute);
	if (cl->context)
		clReleaseContext(cl->context);
	memset(cl, 0, sizeof(*cl));
}

/*
 * What an OpenCL status says about memory. CLBlast passes these codes through
 * unchanged (its CLBlastTempBufferAllocFailure is -4); its own
 * CLBlastInsufficientMemory* codes mean a buffer given to it is too small for
 * the shape, a mistake of the caller, not a device out of memory.
 */
static enum mb_err_kind kind_of(int status)
{
	switch (status) {
	case CL_MEM_OBJECT_ALLOCATION_FAILURE:
	case CL_OUT_OF_RESOURCES:
		return MB_KIND_DEVICE_MEMORY;
	case CL_OUT_OF_HOST_MEMORY:
		return MB_KIND_HOST_MEMORY;
	/* a command that faulted, and what the driver says of its queues and
	 * context after: the context is gone (mb_cl_alive tells the rest) */
	case MB_CL_NV_ILLEGAL_ADDRESS:
	case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
	case CL_INVALID_COMMAND_QUEUE:
	case CL_INVALID_CONTEXT:
		return MB_KIND_DEVICE_LOST;
	default:
		return MB_KIND_OTHER;
	}
}

int mb_cl_alive(const struct mb_cl *cl)
{
	const cl_command_queue q[] = { cl->compute, cl->copy, cl->prefetch };
	const char *names[] = { "compute", "copy", "prefetch" };
	char msg[512];
	size_t i;

	for (i = 0; i < sizeof(q) / sizeof(q[0]); i++)
		if (mb_cl_check(cl, clFinish(q[i]), "clFinish", "the %s queue", names[i])) {
			snprintf(msg, sizeof(msg), "%s", mb_errmsg());
			return mb_fail_kind(MB_KIND_DEVICE_LOST, "%s", msg);
		}
	return 0;
}

static int vcheck(const struct mb_cl *cl, int status, const char *status_name, const char *call,
		  const char *what, va_list ap)
{
	char where[512];

	vsnprintf(where, sizeof(where), what, ap);
	return mb_fail_kind(kind_of(status), "%s failed on '%s' (%s): %s", call, cl->info.name,
			    where, status_name);
}

int mb_cl_event_span(const struct mb_cl *cl, cl_event ev, const char *what, double *start,
		     double *end)
{
	cl_ulong a = 0, b = 0;
	int err;

	*start = *end = NAN;
	if ((err = mb_cl_check(cl,
			       clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(a),
						       &a, NULL),
			       "clGetEventProfilingInfo(START)", "%s", what)) ||
	    (err = mb_cl_check(
		     cl, clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(b), &b, NULL),
		     "clGetEventProfilingInfo(END)", "%s", what)))
		return err;
	if (!a || !b || b < a)
		return mb_fail("the driver of '%s' gave no time for %s (START %llu, END %llu ns)",
			       cl->info.name, what, (unsigned long long)a, (unsigned long long)b);
	*start = 1e-9 * (double)a;
	*end = 1e-9 * (double)b;
	return 0;
}

int mb_cl_event_interval(const struct mb_cl *cl, cl_event first, cl_event last, const char *what,
			 double *seconds)
{
	double start, end, unused;
	int err;

	*seconds = NAN;
	if ((err = mb_cl_event_span(cl, first, what, &start, &unused)) ||
	    (err = mb_cl_event_span(cl, last, what, &unused, &end)))
		return err;
	if (end <= start)
		return mb_fail("the driver of '%s' gave no time for %s (its last command ends at "
			       "%.9f s, before its first starts, at %.9f s)",
			       cl->info.name, what, end, start);
	*seconds = end - start;
	return 0;
}

static size_t pow2_floor(size_t n)
{
	size_t p = 1;

	while (p <= n / 2)
		p *= 2;
	return p;
}

void mb_cl_local_shape(size_t limit, const size_t *item_max, cl_uint dims, size_t *local)
{
	size_t total = pow2_floor(limit < MB_CL_LOCAL_MAX ? (limit ? limit : 1) : MB_CL_LOCAL_MAX);
	size_t first = total, max0 = pow2_floor(item_max[0] ? item_max[0] : 1), max1;

	if (dims == 1) {
		local[0] = first < max0 ? first : max0;
		return;
	}
	/* square, or twice as wide as high: 256 -> 16 x 16, 128 -> 16 x 8 */
	for (first = 1; first * first < total;)
		first *= 2;
	max1 = pow2_floor(item_max[1] ? item_max[1] : 1);
	local[0] = first < max0 ? first : max0;
	local[1] = total / local[0] < max1 ? total / local[0] : max1;
}

size_t mb_cl_round_up(size_t n, size_t multiple)
{
	return n % multiple ? n + (multiple - n % multiple) : n;
}

int mb_cl_local_size(const struct mb_cl *cl, cl_kernel kernel, const char *name, cl_uint dims,
		     size_t *local)
{
	size_t kernel_max = 0, device_max = 0, items[16] = { 0 };
	cl_int st;

	st = clGetKernelWorkGroupInfo(kernel, cl->device, CL_KERNEL_WORK_GROUP_SIZE,
				      sizeof(kernel_max), &kernel_max, NULL);
	if (mb_cl_check(cl, st, "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)",
			"kernel '%s'", name))
		return -MB_EFAIL;
	st = clGetDeviceInfo(cl->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(device_max),
			     &device_max, NULL);
	if (mb_cl_check(cl, st, "clGetDeviceInfo(CL_DEVICE_MAX_WORK_GROUP_SIZE)", "kernel '%s'",
			name))
		return -MB_EFAIL;
	/* one size per dimension (at least 3): room for more than any device has */
	st = clGetDeviceInfo(cl->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(items), items, NULL);
	if (mb_cl_check(cl, st, "clGetDeviceInfo(CL_DEVICE_MAX_WORK_ITEM_SIZES)", "kernel '%s'",
			name))
		return -MB_EFAIL;
	mb_cl_local_shape(kernel_max < device_max ? kernel_max : device_max, items, dims, local);
	return 0;
}

int mb_cl_check(const struct mb_cl *cl, cl_int status, const char *call, const char *what, ...)
{
	va_list ap;
	int err;

	if (status == CL_SUCCESS)
		return 0;
	va_start(ap, what);
	err = vcheck(cl, status, mb_cl_strerror(status), call, what, ap);
	va_end(ap);
	return err;
}

int mb_clblast_check(const struct mb_cl *cl, int status, const char *call, const char *what, ...)
{
	va_list ap;
	int err;

	if (status == CLBlastSuccess)
		return 0;
	va_start(ap, what);
	err = vcheck(cl, status, mb_clblast_strerror(status), call, what, ap);
	va_end(ap);
	return err;
}

const char *mb_clblast_strerror(int status)
{
	switch (status) {
#define NAME(code) \
	case code: \
		return #code
		NAME(CLBlastNotImplemented);
		NAME(CLBlastInvalidMatrixA);
		NAME(CLBlastInvalidMatrixB);
		NAME(CLBlastInvalidMatrixC);
		NAME(CLBlastInvalidVectorX);
		NAME(CLBlastInvalidVectorY);
		NAME(CLBlastInvalidDimension);
		NAME(CLBlastInvalidLeadDimA);
		NAME(CLBlastInvalidLeadDimB);
		NAME(CLBlastInvalidLeadDimC);
		NAME(CLBlastInvalidIncrementX);
		NAME(CLBlastInvalidIncrementY);
		NAME(CLBlastInsufficientMemoryA);
		NAME(CLBlastInsufficientMemoryB);
		NAME(CLBlastInsufficientMemoryC);
		NAME(CLBlastInsufficientMemoryX);
		NAME(CLBlastInsufficientMemoryY);
		NAME(CLBlastInsufficientMemoryTemp);
		NAME(CLBlastInvalidBatchCount);
		NAME(CLBlastInvalidOverrideKernel);
		NAME(CLBlastMissingOverrideParameter);
		NAME(CLBlastInvalidLocalMemUsage);
		NAME(CLBlastNoHalfPrecision);
		NAME(CLBlastNoDoublePrecision);
		NAME(CLBlastInvalidVectorScalar);
		NAME(CLBlastInsufficientMemoryScalar);
		NAME(CLBlastDatabaseError);
		NAME(CLBlastUnknownError);
		NAME(CLBlastUnexpectedError);
#undef NAME
	}
	/* the rest are OpenCL's own codes */
	return mb_cl_strerror(status);
}

const char *const mb_pinned_alloc_names[MB_NPINNED_ALLOCS] = { MB_PINNED_ALLOCS(MB_NAME_, ) };

int mb_cl_pinned_choose(struct mb_cl *cl, enum mb_pinned_alloc asked)
{
	if (asked == MB_PINNED_NV && !cl->create_buffer_nv)
		return mb_bad_input(
			"--pinned-alloc nv: the platform of '%s' has no clCreateBufferNV "
			"(cl_nv_create_buffer, NVIDIA's); alloc-host-ptr works everywhere",
			cl->info.name);
	cl->pinned_alloc = asked != MB_PINNED_AUTO ? asked
			   : cl->create_buffer_nv  ? MB_PINNED_NV
						   : MB_PINNED_ALLOC_HOST_PTR;
	return 0;
}

/* cl_nv_create_buffer's flags (NVIDIA's; not in Khronos' headers) */
#define MB_CL_MEM_LOCATION_HOST_NV (1u << 0)
#define MB_CL_MEM_PINNED_NV	   (1u << 1)

cl_mem mb_cl_create_pinned(const struct mb_cl *cl, size_t bytes, cl_int *st, const char **call)
{
	cl_mem (*create_nv)(cl_context, cl_mem_flags, cl_bitfield, size_t, void *, cl_int *);

	if (cl->pinned_alloc == MB_PINNED_NV) {
		*(void **)&create_nv = cl->create_buffer_nv;
		*call = "clCreateBufferNV(CL_MEM_LOCATION_HOST_NV | CL_MEM_PINNED_NV)";
		return create_nv(cl->context, CL_MEM_READ_WRITE,
				 MB_CL_MEM_LOCATION_HOST_NV | MB_CL_MEM_PINNED_NV, bytes, NULL, st);
	}
	*call = "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)";
	return clCreateBuffer(cl->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL,
			      st);
}

/* Work-items of a fill_span at most: enough to fill any device, few enough to loop. */
#define FILL_ITEMS_MAX ((size_t)1 << 20)

int mb_cl_fill(const struct mb_cl *cl, cl_command_queue q, cl_mem buf, uint64_t off, uint64_t bytes,
	       uint32_t pattern, const char *what)
{
	cl_uint width = 16;
	uint64_t words;
	size_t global;
	cl_int st;

	while (width > 1 && (off % width || bytes % width))
		width /= width == 16 ? 4 : 2;
	if (pattern && width < 4)
		return mb_fail("a fill of %s: %llu bytes at %llu, not whole 32-bit words", what,
			       (unsigned long long)bytes, (unsigned long long)off);
	words = bytes / width;
	if (!words)
		return 0;
	global = mb_cl_round_up(words < FILL_ITEMS_MAX ? (size_t)words : FILL_ITEMS_MAX,
				cl->fill_local);
	st = clSetKernelArg(cl->fill, 0, sizeof(buf), &buf);
	if (st == CL_SUCCESS)
		st = clSetKernelArg(cl->fill, 1, sizeof(cl_ulong), &(cl_ulong){ off });
	if (st == CL_SUCCESS)
		st = clSetKernelArg(cl->fill, 2, sizeof(cl_ulong), &(cl_ulong){ words });
	if (st == CL_SUCCESS)
		st = clSetKernelArg(cl->fill, 3, sizeof(width), &width);
	if (st == CL_SUCCESS)
		st = clSetKernelArg(cl->fill, 4, sizeof(cl_uint), &(cl_uint){ pattern });
	if (mb_cl_check(cl, st, "clSetKernelArg", "fill_span, %s", what))
		return -MB_EFAIL;
	st = clEnqueueNDRangeKernel(q, cl->fill, 1, NULL, &global, &cl->fill_local, 0, NULL, NULL);
	return mb_cl_check(cl, st, "clEnqueueNDRangeKernel", "fill_span, %s, %llu bytes at %llu",
			   what, (unsigned long long)bytes, (unsigned long long)off);
}

int mb_cl_zero(const struct mb_cl *cl, cl_command_queue q, cl_mem buf, uint64_t off, uint64_t bytes,
	       const char *what)
{
	return mb_cl_fill(cl, q, buf, off, bytes, 0, what);
}

int mb_cl_kernel(const struct mb_cl *cl, const char *name, cl_kernel *out)
{
	cl_int st;

	*out = clCreateKernel(cl->program, name, &st);
	return mb_cl_check(cl, st, "clCreateKernel", "kernel '%s'", name);
}
