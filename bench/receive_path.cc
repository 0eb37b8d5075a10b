#include "receive_path.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench_process.h"
#include "pcp/diloco/delta_sum.h"
#include "pcp/diloco/screening.h"
#include "pcp/rpc/chunked_list.h"
#include "pcp/rpc/crc32c.h"
#include "pcp/rpc/tensor_list.h"

namespace pcp::bench {
namespace {

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The least thread CPU time of `reps` runs of `pass`, in ms per 100 MB of `bytes`.
double MsPer100MB(int reps, int64_t bytes, const std::function<void()>& pass) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    const double t0 = ThreadCpuSeconds();
    pass();
    best = std::min(best, ThreadCpuSeconds() - t0);
  }
  return best * 1e3 * 1e8 / static_cast<double>(bytes);
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) Die(absl::StrCat("receive path, ", what, ": ", s.ToString()));
}

}  // namespace

void PrintReceivePath(const std::vector<NamedTensor>& params, int64_t chunk_bytes, int reps) {
  auto list = ChunkedList::Create(params, ChunkOptions{chunk_bytes});
  if (!list.ok()) Die("receive path: " + list.status().ToString());
  const ChunkedList& chunks = **list;
  const std::vector<TensorSpec> specs = SpecsOf(params);
  const int64_t bytes = chunks.total_bytes();
  auto piece = [&](size_t i) { return absl::string_view(chunks.payload(i).data, chunks.payload(i).size); };

  std::vector<Tensor> sums;
  std::vector<absl::Span<float>> spans;
  double squares = 0;
  for (const NamedTensor& p : params) {
    AdviseHugePages(sums.emplace_back(DType::kF32, p.tensor.shape()));  // as the shepherd's RoundSum
    spans.emplace_back(sums.back().data<float>(), static_cast<size_t>(sums.back().num_elements()));
    squares +=
        diloco::SumOfSquares(absl::MakeConstSpan(p.tensor.data<float>(), static_cast<size_t>(p.tensor.num_elements())));
  }
  const double norm = std::sqrt(squares);
  std::vector<NamedTensor> last;  // zero-copy: last round's tensors

  volatile uint32_t crc_sink = 0;
  const double crc = MsPer100MB(reps, bytes, [&] {
    uint32_t c = 0;
    for (size_t i = 0; i < chunks.size(); ++i) c ^= Crc32c(piece(i));
    crc_sink = c;
  });
  const double assemble = MsPer100MB(reps, bytes, [&] {
    TensorListAssembler assembler;
    assembler.ExpectSpecs(specs);
    assembler.ReuseBuffers(std::move(last));
    for (size_t i = 0; i < chunks.size(); ++i) {
      const absl::string_view data = piece(i);
      Check(assembler.AddPieces(chunks.chunk(i), DataPieces(&data, 1)), "assemble");
    }
    auto taken = assembler.Take();
    Check(taken.status(), "assemble");
    last = *std::move(taken);
  });
  // Chunk i's data as `pieces` (at most 6) go through StreamTo into a DeltaSum.
  auto stream_in = [&](int (*cut)(absl::string_view, absl::string_view*)) {
    return MsPer100MB(reps, bytes, [&] {
      diloco::DeltaSum sum(spans);
      std::unique_ptr<diloco::DeltaSum::Contribution> c = sum.Begin("bench", 1, 1, norm);
      TensorListAssembler assembler;
      assembler.ExpectSpecs(specs);
      assembler.StreamTo([&](uint32_t tensor, int64_t offset, const F32Pieces& values, double sum_of_squares) {
        return c->Add(tensor, offset, values, sum_of_squares);
      });
      absl::string_view pieces[6];
      for (size_t i = 0; i < chunks.size(); ++i) {
        const int n = cut(piece(i), pieces);
        Check(assembler.AddPieces(chunks.chunk(i), DataPieces(pieces, static_cast<size_t>(n))), "stream");
      }
    });
  };
  const double stream = stream_in([](absl::string_view data, absl::string_view* pieces) {
    pieces[0] = data;
    return 1;
  });
  // The same with each chunk in 6 pieces, cut at odd byte offsets (values split between
  // pieces), as gRPC's receive buffer holds a 1 MiB chunk.
  const double stream_cut = stream_in([](absl::string_view data, absl::string_view* pieces) {
    size_t at = 0;
    for (int k = 0; k < 5; ++k) {
      const size_t next = std::min(data.size(), (k + 1) * (data.size() / 6) + 2 * k + 1);
      pieces[k] = data.substr(at, next - at);
      at = next;
    }
    pieces[5] = data.substr(at);
    return 6;
  });
  // The DeltaSum's part: the same chunks' values added straight from θ's memory.
  const double add = MsPer100MB(reps, bytes, [&] {
    diloco::DeltaSum sum(spans);
    std::unique_ptr<diloco::DeltaSum::Contribution> c = sum.Begin("bench", 1, 1, norm);
    for (size_t i = 0; i < chunks.size(); ++i) {
      const v1::TensorChunk& chunk = chunks.chunk(i);
      const absl::string_view data = piece(i);
      Check(c->Add(chunk.index(), static_cast<int64_t>(chunk.offset() / 4),
                   absl::MakeConstSpan(reinterpret_cast<const float*>(data.data()), data.size() / 4)),
            "add");
    }
  });
  volatile double squares_sink = 0;
  const double sumsq = MsPer100MB(reps, bytes, [&] {
    double s = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const absl::string_view data = piece(i);
      s += diloco::SumOfSquares(absl::MakeConstSpan(reinterpret_cast<const float*>(data.data()), data.size() / 4));
    }
    squares_sink = s;
  });
  std::printf("\nThe receiver's own work without gRPC (one thread, %lld KiB chunks, CPU ms per 100 MB, least of %d):\n",
              static_cast<long long>(chunk_bytes >> 10), reps);
  std::printf("  CRC-32C alone                                         %6.1f\n", crc);
  std::printf("  zero-copy: assemble (copy + CRC into last round's)    %6.1f\n", assemble);
  std::printf("  streaming: StreamTo -> DeltaSum (copy+CRC+norm, add)  %6.1f\n", stream);
  std::printf("    of which DeltaSum::Contribution::Add (norm + add)   %6.1f\n", add);
  std::printf("    of which SumOfSquares (the norm check)              %6.1f\n", sumsq);
  std::printf("  streaming, each chunk in 6 pieces (values split)      %6.1f\n", stream_cut);
}

}  // namespace pcp::bench
