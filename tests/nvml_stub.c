/*
 * nvml_stub: a stand-in for NVIDIA's libnvidia-ml.so.1 in the tests, built
 * under that name in a folder of its own and found through
 * LD_LIBRARY_PATH. It exports the four NVML calls muonbench makes and
 * answers figures the test sets: MB_STUB_NVML_USED="BASE,PEAK" (bytes) is
 * the used memory, BASE at the first reading after the device was found and
 * PEAK at every later one. MB_STUB_NVML_PCI, when set, is the one PCI
 * address it knows (else any, PoCL's empty one included).
 */
#include <stdlib.h>
#include <string.h>

struct nvml_memory {
	unsigned long long total, free, used;
};

static int device, readings;

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetHandleByPciBusId_v2(const char *pci, void **dev);
int nvmlDeviceGetMemoryInfo(void *dev, struct nvml_memory *mem);

int nvmlInit_v2(void)
{
	return 0;
}

int nvmlShutdown(void)
{
	return 0;
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *pci, void **dev)
{
	const char *want = getenv("MB_STUB_NVML_PCI");

	if (want && strcmp(want, pci))
		return 6; /* NVML_ERROR_NOT_FOUND */
	*dev = &device;
	return 0;
}

int nvmlDeviceGetMemoryInfo(void *dev, struct nvml_memory *mem)
{
	const char *v = getenv("MB_STUB_NVML_USED");
	unsigned long long base = 0, peak = 0;
	char *end;

	if (dev != &device)
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	if (v) {
		base = strtoull(v, &end, 10);
		peak = *end == ',' ? strtoull(end + 1, NULL, 10) : base;
	}
	/* the first reading is muonbench's check that the device answers */
	mem->used = readings++ <= 1 ? base : peak;
	mem->total = 80ULL << 30;
	mem->free = mem->total - mem->used;
	return 0;
}
