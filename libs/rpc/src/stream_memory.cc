#include "pcp/rpc/stream_memory.h"

#include <cstdlib>  // defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace pcp {

bool KeepStreamBuffersInHeap() {
#if defined(__GLIBC__)
  // Setting either threshold also turns off glibc's dynamic adjustment of both.
  return mallopt(M_MMAP_THRESHOLD, kStreamBlockBytes) == 1 && mallopt(M_TRIM_THRESHOLD, kHeapKeepBytes) == 1;
#else
  return false;
#endif
}

}  // namespace pcp
