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

// Every NCCL symbol the CUDA torch of the rule book's torch_version imports (nm -D --undefined-only
// torch/lib/libtorch_cuda.so of torch 2.11.0: 38 names). Preloaded (rule nccl_preload), this library
// is the process's libnccl.so.2 by its SONAME, so the loader takes no other: a name missing here fails
// `import torch` with "undefined symbol". They also let the GPU gate ask which library torch's
// ProcessGroupNCCL and vLLM's pynccl resolve to. Stand-ins only: each refuses the call.
#define FAKE_NCCL_ENTRY(name) extern "C" ncclResult_t name(void) { return ncclInvalidArgument; }
extern "C" const char *ncclGetErrorString(int result) { return result ? "fake-nccl: refused" : "no error"; }
extern "C" const char *ncclGetLastError(void *comm) { return "fake-nccl: refused"; }
FAKE_NCCL_ENTRY(ncclAlltoAll)
FAKE_NCCL_ENTRY(ncclBcast)
FAKE_NCCL_ENTRY(ncclCommAbort)
FAKE_NCCL_ENTRY(ncclCommCount)
FAKE_NCCL_ENTRY(ncclCommDeregister)
FAKE_NCCL_ENTRY(ncclCommFinalize)
FAKE_NCCL_ENTRY(ncclCommGetAsyncError)
FAKE_NCCL_ENTRY(ncclCommInitAll)
FAKE_NCCL_ENTRY(ncclCommInitRank)
FAKE_NCCL_ENTRY(ncclCommInitRankScalable)
FAKE_NCCL_ENTRY(ncclCommRegister)
FAKE_NCCL_ENTRY(ncclCommShrink)
FAKE_NCCL_ENTRY(ncclCommSplit)
FAKE_NCCL_ENTRY(ncclCommUserRank)
FAKE_NCCL_ENTRY(ncclCommWindowDeregister)
FAKE_NCCL_ENTRY(ncclCommWindowRegister)
FAKE_NCCL_ENTRY(ncclDevCommCreate)
FAKE_NCCL_ENTRY(ncclDevCommDestroy)
FAKE_NCCL_ENTRY(ncclGetUniqueId)
FAKE_NCCL_ENTRY(ncclGroupEnd)
FAKE_NCCL_ENTRY(ncclGroupSimulateEnd)
FAKE_NCCL_ENTRY(ncclGroupStart)
FAKE_NCCL_ENTRY(ncclMemAlloc)
FAKE_NCCL_ENTRY(ncclMemFree)
FAKE_NCCL_ENTRY(ncclRedOpCreatePreMulSum)
FAKE_NCCL_ENTRY(ncclRedOpDestroy)
FAKE_NCCL_ENTRY(ncclReduce)
FAKE_NCCL_ENTRY(ncclCommInitRankConfig)
FAKE_NCCL_ENTRY(ncclAllReduce)
FAKE_NCCL_ENTRY(ncclAllGather)
FAKE_NCCL_ENTRY(ncclReduceScatter)
FAKE_NCCL_ENTRY(ncclBroadcast)
FAKE_NCCL_ENTRY(ncclSend)
FAKE_NCCL_ENTRY(ncclRecv)
FAKE_NCCL_ENTRY(ncclCommDestroy)
