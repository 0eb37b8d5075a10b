// Heap settings for processes that stream tensors over gRPC (the shepherd and the worker).
//
//   int main(int argc, char** argv) {
//     pcp::KeepStreamBuffersInHeap();   // first thing, before gRPC starts
//
// gRPC reads a stream into freshly allocated buffers of up to a few MiB and frees them once a
// chunk is assembled. With glibc's defaults such blocks are mmap()ed, or the heap top they
// leave free is trimmed back to the kernel, so every megabyte received is page-faulted and
// zeroed afresh (and unmapped with TLB shootdowns). Serving blocks up to kStreamBlockBytes
// from the heap and keeping up to kHeapKeepBytes of free heap lets them be reused instead:
// bench/rpc_stream_bench.cc measures about a quarter less CPU per byte received.
// The cost is a process footprint that stays near its peak rather than shrinking.
#ifndef PCP_RPC_STREAM_MEMORY_H_
#define PCP_RPC_STREAM_MEMORY_H_

namespace pcp {

inline constexpr int kStreamBlockBytes = 32 << 20;
inline constexpr int kHeapKeepBytes = 256 << 20;

// Applies the settings above (glibc's mallopt). False where the C library has no such knobs
// or refuses them; the process works either way.
bool KeepStreamBuffersInHeap();

}  // namespace pcp

#endif  // PCP_RPC_STREAM_MEMORY_H_
