// Codec speed and accuracy (libs/codec): for each codec, GB/s per core (one thread, f32 input
// bytes per second) of encode, decode and decode-add, and encode+decode together, at 1M and
// 16M floats; then the round-trip error relative to each block's absmax (f32/bf16: relative to
// |x|) and the bits per value with the resulting "× fewer bytes than data-parallel". Sparse
// codecs (topk2/4/8) at densities 3% and 1.5%: their bits per value are measured (positions and
// scales included), their error is what error feedback carries to the next round.
//
//   build/bench/pcp_codec_bench            # ~10 s; prints the load average first
//   build/bench/pcp_codec_bench 262144     # other sizes (floats)
//
// Input: Δ-like values (Gaussian, a scale that changes every 97 values, 0.1% outliers × 50).
// Each figure is the best of several runs (the least disturbed by other processes on a shared
// machine); the load average tells how shared it was.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "pcp/codec/codec.h"
#include "pcp/codec/encoded.h"

namespace {

using pcp::codec::Codec;

// The rows: every codec, the sparse ones at two densities.
struct Row {
  Codec codec;
  double density;  // sparse codecs only
  std::string name;
};
std::vector<Row> Rows() {
  std::vector<Row> rows;
  for (const auto& [codec, name] : pcp::codec::kCodecNames) {
    if (!pcp::codec::IsSparse(codec)) {
      rows.push_back({codec, 0, std::string(name)});
      continue;
    }
    for (double d : {0.03, 0.015}) rows.push_back({codec, d, std::string(name) + (d == 0.03 ? "@3%" : "@1.5%")});
  }
  return rows;
}

std::string EncodeRow(const Row& row, const std::vector<float>& x) {
  absl::StatusOr<std::string> bytes = pcp::codec::Encode(row.codec, x, 0, row.density);
  if (!bytes.ok()) {
    std::fprintf(stderr, "codec_bench: %s\n", std::string(bytes.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(bytes);
}

std::vector<float> DeltaLike(size_t n) {
  std::mt19937_64 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_scale(-12.0f, 2.0f);
  std::vector<float> x(n);
  float scale = 1e-3f;
  for (size_t i = 0; i < n; ++i) {
    if (i % 97 == 0) scale = std::exp2(log_scale(rng));
    x[i] = scale * normal(rng);
    if (rng() % 1000 == 0) x[i] *= 50.0f;
  }
  return x;
}

// Best wall time of `fn` over repeated runs: at least `min_runs`, until `budget_s` is spent.
template <typename F>
double BestSeconds(F&& fn, int min_runs, double budget_s) {
  double best = 1e30, spent = 0;
  for (int run = 0; run < min_runs || spent < budget_s; ++run) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, s);
    spent += s;
    if (run > 200) break;
  }
  return best;
}

void Check(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "codec_bench: %s\n", std::string(s.message()).c_str());
    std::exit(1);
  }
}

void Speed(size_t n) {
  const std::vector<float> x = DeltaLike(n);
  std::vector<float> out(n), acc(n, 0.0f);
  const double gb = 4.0 * static_cast<double>(n) / 1e9;
  const int min_runs = n > (4u << 20) ? 3 : 10;
  const double budget = n > (4u << 20) ? 0.3 : 0.15;
  std::printf("\n%zu floats (%.0f MB of f32), GB/s of f32 per core:\n", n, gb * 1e3);
  std::printf("  %-11s %8s %8s %11s %15s\n", "codec", "encode", "decode", "decode-add", "encode+decode");
  for (const Row& row : Rows()) {
    const Codec codec = row.codec;
    std::string bytes =
        pcp::codec::IsSparse(codec) ? EncodeRow(row, x) : std::string(pcp::codec::EncodedSize(codec, n), '\0');
    const absl::Span<char> buffer(bytes.data(), bytes.size());
    // Sparse codecs: Encode (sizes depend on the data), its allocation included.
    const double enc = BestSeconds(
        [&] {
          if (pcp::codec::IsSparse(codec)) {
            bytes = EncodeRow(row, x);
          } else {
            Check(pcp::codec::EncodeInto(codec, x, 0, buffer));
          }
        },
        min_runs, budget);
    const double dec = BestSeconds([&] { Check(pcp::codec::Decode(bytes, absl::MakeSpan(out))); }, min_runs, budget);
    const double add =
        BestSeconds([&] { Check(pcp::codec::DecodeAdd(bytes, 0.5f, absl::MakeSpan(acc))); }, min_runs, budget);
    std::printf("  %-11s %8.2f %8.2f %11.2f %15.2f\n", row.name.c_str(), gb / enc, gb / dec, gb / add,
                gb / (enc + dec));
  }
}

void Accuracy(size_t n) {
  const std::vector<float> x = DeltaLike(n);
  std::vector<float> y(n);
  std::printf("\nround-trip error, %zu floats (relative to the block's absmax; f32/bf16: to |x|):\n", n);
  std::printf("  %-11s %6s %10s %12s %12s %22s\n", "codec", "block", "bits/value", "max |err|", "RMS err",
              "x fewer than DP (/tau)");
  for (const Row& row : Rows()) {
    const Codec codec = row.codec;
    const std::string bytes = EncodeRow(row, x);
    Check(pcp::codec::Decode(bytes, absl::MakeSpan(y)));
    const size_t block = pcp::codec::IsBlockwise(codec) ? pcp::codec::DefaultBlockSize(codec) : 1;
    double max_rel = 0, sum_sq = 0;
    size_t counted = 0;
    for (size_t start = 0; start < n; start += block) {
      const size_t end = std::min(n, start + block);
      float absmax = 0;
      for (size_t i = start; i < end; ++i) absmax = std::max(absmax, std::fabs(x[i]));
      if (absmax == 0) continue;
      for (size_t i = start; i < end; ++i) {
        const double rel = std::fabs(static_cast<double>(x[i]) - y[i]) / absmax;
        max_rel = std::max(max_rel, rel);
        sum_sq += rel * rel;
        ++counted;
      }
    }
    // Measured, header, scales and positions included (for dense codecs equal to BitsPerValue
    // but for the 16-byte header).
    const double bits = pcp::codec::IsSparse(codec) ? 8.0 * static_cast<double>(bytes.size()) / static_cast<double>(n)
                                                    : pcp::codec::BitsPerValue(codec);
    std::printf("  %-11s %6zu %10.3f %12.3e %12.3e %22.2f\n", row.name.c_str(),
                pcp::codec::IsBlockwise(codec) ? block : 0, bits, max_rel, std::sqrt(sum_sq / counted), 32.0 / bits);
  }
  std::printf(
      "  (sparse: the values not sent count as errors; error feedback sends them in later rounds;\n"
      "   bound: int8 max 1/254 = %.3e, int4 max 1/14 = %.3e, bf16 max 2^-8 = %.3e;\n"
      "   data-parallel sends 32 bits a value every step, DiLoCo these bits every tau steps)\n",
      1.0 / 254, 1.0 / 14, std::ldexp(1.0, -8));
}

}  // namespace

int main(int argc, char** argv) {
  std::string load = "?";
  if (std::ifstream f("/proc/loadavg"); f) std::getline(f, load);
  std::printf("codec bench: one thread; load average %s (other processes share the cores)\n", load.c_str());
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {size_t{1} << 20, size_t{16} << 20};
  for (size_t n : sizes) Speed(n);
  Accuracy(sizes.front());
  return 0;
}
