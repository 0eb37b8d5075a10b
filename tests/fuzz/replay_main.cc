// A main() for fuzz targets built without libFuzzer (the default build, gcc): runs the
// target over every file of its seed corpus, then over deterministic mutations of them
// (bit flips, byte insertions and deletions, splices, truncations), bounded in count and
// time. It is the smoke test ctest runs for each target; `scripts/fuzz.sh` runs the real
// libFuzzer build for long campaigns.
//
//   json_fuzz CORPUS_DIR [--iterations=N] [--seconds=S] [--seed=K]
//
// Prints what it ran; a finding aborts the process (ctest reports the failure) after the
// input was written to ./fuzz-crash-<target>.bin.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "fuzz_target.h"

namespace {

std::string g_current;  // the input being run, saved when the process dies on it

void SaveCurrent() {
  std::ofstream out("fuzz-crash-" PCP_FUZZ_TARGET ".bin", std::ios::binary);
  out.write(g_current.data(), static_cast<std::streamsize>(g_current.size()));
}

void Run(const std::string& input) {
  g_current = input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string Mutate(const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  std::string s = corpus[rng() % corpus.size()];
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 6) {
      case 0:  // flip a bit
        if (!s.empty()) s[rng() % s.size()] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // insert a byte (often a structural one)
      {
        static const char kBytes[] = "{}[]:,\"\\\n -0123456789e.%#x";
        const char c = rng() % 2 ? kBytes[rng() % (sizeof(kBytes) - 1)] : static_cast<char>(rng());
        s.insert(s.begin() + static_cast<long>(s.empty() ? 0 : rng() % (s.size() + 1)), c);
        break;
      }
      case 2:  // delete a range
        if (!s.empty()) {
          const size_t at = rng() % s.size();
          s.erase(at, 1 + rng() % std::min<size_t>(16, s.size() - at));
        }
        break;
      case 3:  // splice with another corpus entry
      {
        const std::string& other = corpus[rng() % corpus.size()];
        const size_t cut = s.empty() ? 0 : rng() % (s.size() + 1);
        const size_t from = other.empty() ? 0 : rng() % (other.size() + 1);
        s = s.substr(0, cut) + other.substr(from);
        break;
      }
      case 4:  // truncate
        if (!s.empty()) s.resize(rng() % s.size());
        break;
      default:  // overwrite a byte with an extreme value
        if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng() % 2 ? 0xff : 0x00);
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [--iterations=N] [--seconds=S] [--seed=K]\n", argv[0]);
    return 2;
  }
  long iterations = 20000;
  double seconds = 5;
  unsigned long long seed = 1;
  for (int i = 2; i < argc; ++i) {
    if (std::strncmp(argv[i], "--iterations=", 13) == 0)
      iterations = std::atol(argv[i] + 13);
    else if (std::strncmp(argv[i], "--seconds=", 10) == 0)
      seconds = std::atof(argv[i] + 10);
    else if (std::strncmp(argv[i], "--seed=", 7) == 0)
      seed = std::strtoull(argv[i] + 7, nullptr, 10);
    else {
      std::fprintf(stderr, "%s: unknown argument '%s'\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> corpus;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1], ec)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (ec || corpus.empty()) {
    std::fprintf(stderr, "%s: no seed inputs in %s\n", argv[0], argv[1]);
    return 2;
  }
  std::signal(
      SIGABRT, +[](int) {
        SaveCurrent();
        std::_Exit(134);
      });
  std::signal(
      SIGSEGV, +[](int) {
        SaveCurrent();
        std::_Exit(139);
      });
  for (const std::string& input : corpus) Run(input);
  Run("");
  std::mt19937_64 rng(seed);
  const auto start = std::chrono::steady_clock::now();
  long ran = 0;
  for (; ran < iterations; ++ran) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) break;
    Run(Mutate(corpus, rng));
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %zu seed inputs and %ld mutations (seed %llu) in %.2f s, %.0f execs/s: no finding\n",
              PCP_FUZZ_TARGET, corpus.size(), ran, seed, took, took > 0 ? ran / took : 0.0);
  return 0;
}
