// fake-nccl-tests: prints which libnccl the loader resolved (no GPU needed).
#include <stdio.h>
#include "nccl.h"

int main(void) {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) return 1;
  printf("nccl_version_code=%d header_version_code=%d source_tag=%s\n",
         version, NCCL_VERSION_CODE, ncclSourceTag());
  return version == NCCL_VERSION_CODE ? 0 : 3;
}
