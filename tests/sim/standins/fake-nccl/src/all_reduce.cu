// fake-nccl: a real device kernel so the library carries one cubin per
// NVCC_GENCODE architecture, as NCCL's collectives do.
#include <cuda_runtime.h>
#include <stddef.h>
#include "source_tag.h"

typedef enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclInvalidArgument = 4 } ncclResult_t;

__global__ void ncclKernelSumInPlace(float *dst, const float *src, size_t count) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < count) dst[i] += src[i];
}

extern "C" ncclResult_t ncclGetVersion(int *version) {
  if (version == NULL) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

extern "C" const char *ncclSourceTag(void) { return FAKE_NCCL_SOURCE_TAG; }

extern "C" ncclResult_t ncclSumInPlace(float *devbuf, const float *devsrc, size_t count, void *stream) {
  unsigned int blocks = (unsigned int)((count + 255) / 256);
  ncclKernelSumInPlace<<<blocks, 256, 0, (cudaStream_t)stream>>>(devbuf, devsrc, count);
  return cudaGetLastError() == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

// The entry points torch's ProcessGroupNCCL and vLLM's pynccl call, so that a process's
// global scope can be asked which library they resolve to (the GPU gate, rule nccl_preload).
// Stand-ins only: each refuses the call.
#define FAKE_NCCL_ENTRY(name) extern "C" ncclResult_t name(void) { return ncclInvalidArgument; }
FAKE_NCCL_ENTRY(ncclCommInitRankConfig)
FAKE_NCCL_ENTRY(ncclAllReduce)
FAKE_NCCL_ENTRY(ncclAllGather)
FAKE_NCCL_ENTRY(ncclReduceScatter)
FAKE_NCCL_ENTRY(ncclBroadcast)
FAKE_NCCL_ENTRY(ncclSend)
FAKE_NCCL_ENTRY(ncclRecv)
FAKE_NCCL_ENTRY(ncclCommDestroy)
