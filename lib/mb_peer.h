/*
 * mb_peer: a framework's Newton-Schulz times beside ours. Reads the "ns,"
 * lines of the PyTorch peer's output (../shared/gpu-kit/torch_peer.py,
 * scripts/gpu-ns.sh: "ns,RxC,METHOD,DTYPE,MEDIAN_S,TFLOPS", DTYPE
 * bfloat16, float16 or float32, its header line "ns,shape,..." and every
 * other line skipped) so that ns can print the peer's rate per shape,
 * method and precision and ours against it.
 */
#ifndef MB_PEER_H
#define MB_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "mb_ns.h"

#define MB_PEER_MAX 256

struct mb_peer_ns {
	uint64_t rows, cols;
	enum mb_ns_method method;
	enum mb_precision precision;
	double median_s;
};

struct mb_peer {
	size_t n;
	struct mb_peer_ns ns[MB_PEER_MAX];
};

/*
 * Read PATH's Newton-Schulz lines into *P. A file that cannot be read, an
 * "ns," line that is not one (its line number and why), or more than
 * MB_PEER_MAX of them is -MB_EINPUT.
 */
int mb_peer_load(const char *path, struct mb_peer *p);

/* The peer's median seconds for ROWS x COLS by METHOD at PRECISION; NaN if it has none. */
double mb_peer_ns_seconds(const struct mb_peer *p, uint64_t rows, uint64_t cols,
			  enum mb_ns_method method, enum mb_precision precision);

#endif
