/*
 * nvml_stub: a stand-in for NVIDIA's libnvidia-ml.so.1 in the tests, built
 * under that name in a folder of its own and found through
 * LD_LIBRARY_PATH. It exports the four NVML calls muonbench makes and
 * answers figures the test sets: MB_STUB_NVML_USED="U0,U1,..." (bytes) is
 * the used memory, U0 at the first reading (muonbench's check that the
 * device answers), U1 at the second, and so on, the last for every reading
 * after. MB_STUB_NVML_PCI, when set, is the one PCI address it knows (else
 * any, PoCL's empty one included).
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
	unsigned long long used = 0;
	int i;
	char *end;

	if (dev != &device)
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	/* the reading'th value of the list, or its last */
	for (i = 0; v && *v; i++) {
		used = strtoull(v, &end, 10);
		if (i == readings || *end != ',')
			break;
		v = end + 1;
	}
	readings++;
	mem->used = used;
	mem->total = 80ULL << 30;
	mem->free = mem->total - mem->used;
	return 0;
}
