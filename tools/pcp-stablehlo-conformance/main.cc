// pcp-stablehlo-conformance: runs StableHLO's public test suites (openxla/stablehlo's
// stablehlo/testdata and stablehlo/tests/interpret) through PCP's parser, reference
// interpreter and backends, and tabulates per op what passed, failed and is out of scope.
//
//   pcp-stablehlo-conformance --markdown=out.md DIR/stablehlo/testdata DIR/stablehlo/tests/interpret
//
// Each argument is a directory (its *.mlir files, not those of subdirectories; the suite is
// named after it) or one file. Interpret files are split at `// -----` lines into cases.
// Progress goes to stderr; the totals to stdout. scripts/stablehlo-conformance.sh wraps it.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "pcp/conformance/isolated.h"
#include "pcp/conformance/runner.h"
#include "pcp/conformance/table.h"

ABSL_FLAG(std::string, backends, "cpu", "backends besides the interpreter, comma-separated (cpu, vulkan; empty: none)");
ABSL_FLAG(std::string, markdown, "", "write the table as markdown to this file");
ABSL_FLAG(std::string, snapshot, "", "the test suites' commit, for the table's header");
ABSL_FLAG(std::string, note, "", "a line for the table's header (what was left out and why)");
ABSL_FLAG(int, progress_every, 200, "print a progress line every N cases (0: never)");
ABSL_FLAG(bool, verbose, false, "print every case's verdict and reason");
ABSL_FLAG(bool, isolate, true, "run each case in a child process (a crash fails one case, not the run)");
ABSL_FLAG(int, timeout_s, 120, "with --isolate: fail a case that runs longer");

namespace fs = std::filesystem;
using pcp::conformance::CaseResult;

namespace {

struct Input {
  std::string suite;
  fs::path path;
  std::string relative;  // the name in tables: path within the suite's directory
};

std::vector<Input> CollectInputs(const std::vector<char*>& args, std::string* error) {
  std::vector<Input> inputs;
  for (size_t i = 1; i < args.size(); ++i) {
    const fs::path root(args[i]);
    std::error_code ec;
    if (fs::is_directory(root, ec)) {
      std::vector<Input> found;
      for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
        if (e.is_regular_file() && e.path().extension() == ".mlir") {
          found.push_back({root.filename().string(), e.path(), fs::relative(e.path(), root).string()});
        }
      }
      std::sort(found.begin(), found.end(), [](const Input& a, const Input& b) { return a.relative < b.relative; });
      inputs.insert(inputs.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(root, ec)) {
      inputs.push_back({root.parent_path().filename().string(), root, root.filename().string()});
    } else {
      *error = absl::StrCat(args[i], ": no such file or directory");
      return {};
    }
  }
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("pcp-stablehlo-conformance [flags] DIR_OR_FILE...");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) {
    std::fprintf(stderr, "usage: pcp-stablehlo-conformance [flags] DIR_OR_FILE...\n");
    return 2;
  }
  std::string error;
  const std::vector<Input> inputs = CollectInputs(args, &error);
  if (!error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  pcp::conformance::RunOptions options;
  options.backends.clear();
  for (absl::string_view b : absl::StrSplit(absl::GetFlag(FLAGS_backends), ',', absl::SkipEmpty())) {
    options.backends.emplace_back(b);
  }
  const absl::Time start = absl::Now();
  pcp::conformance::Table table;
  int cases = 0;
  const int every = absl::GetFlag(FLAGS_progress_every);
  for (const Input& input : inputs) {
    std::ifstream in(input.path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    const std::vector<std::string> parts = pcp::conformance::SplitCases(text);
    const std::string op = pcp::conformance::TableOp(input.relative);
    for (size_t p = 0; p < parts.size(); ++p) {
      const std::string name = parts.size() == 1 ? input.relative : absl::StrCat(input.relative, "#", p + 1);
      // Positions in messages are relative to the suite ("testdata/abs_float32_20_20.mlir:12:5").
      const std::string source = absl::StrCat(input.suite, "/", input.relative);
      auto run = [&] { return pcp::conformance::RunCase(parts[p], source, options); };
      const CaseResult r =
          absl::GetFlag(FLAGS_isolate) ? pcp::conformance::RunIsolated(run, absl::GetFlag(FLAGS_timeout_s)) : run();
      table.Add(input.suite, op, name, r);
      ++cases;
      if (absl::GetFlag(FLAGS_verbose)) {
        std::printf("%s %s%s%s\n", std::string(pcp::conformance::VerdictName(r.verdict)).c_str(), name.c_str(),
                    r.reason.empty() ? "" : ": ", r.reason.c_str());
      }
      if (every > 0 && cases % every == 0) {
        const pcp::conformance::Tally& t = table.total();
        std::fprintf(stderr, "[%d cases, %.0f s] in scope %d, passed %d, failed %d, unsupported %d\n", cases,
                     absl::ToDoubleSeconds(absl::Now() - start), t.in_scope(), t.passed, t.failed, t.unsupported);
      }
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const pcp::conformance::Tally& t = table.total();
  const std::string backends = options.backends.empty() ? "none" : absl::StrJoin(options.backends, ", ");
  if (!absl::GetFlag(FLAGS_markdown).empty()) {
    std::vector<std::string> header = {
        absl::StrCat("- date: ", absl::FormatTime("%Y-%m-%d %H:%M UTC", absl::Now(), absl::UTCTimeZone())),
        absl::StrCat("- suites: openxla/stablehlo",
                     absl::GetFlag(FLAGS_snapshot).empty() ? "" : absl::StrCat(" at ", absl::GetFlag(FLAGS_snapshot))),
        absl::StrCat("- run on: the reference interpreter, then backends: ", backends, " (every check on each)"),
        absl::StrFormat("- %d cases in %.0f s", cases, seconds),
        "- in scope: every op in PCP's op list (or func.*, call, return, the check ops, stablehlo.while with a"
        " static trip count, which PCP unrolls, dynamic_slice and dynamic_update_slice), element types f32 / i32 / i64 / i1, reduce regions add / maximum,"
        " scatter regions add / assign; f64 is out (PCP computes it in f32), and so are i8 / i16 / ui8 / ui16 /"
        " ui32 (read widened to i32 / i64; the suite tests their wraparound, which PCP does not model)",
    };
    if (!absl::GetFlag(FLAGS_note).empty()) header.push_back(absl::StrCat("- ", absl::GetFlag(FLAGS_note)));
    std::ofstream md(absl::GetFlag(FLAGS_markdown));
    md << table.Markdown(header);
    if (!md) {
      std::fprintf(stderr, "cannot write %s\n", absl::GetFlag(FLAGS_markdown).c_str());
      return 1;
    }
  }
  std::printf("cases %d: in scope %d, passed %d (%s of in scope), failed %d, unsupported %d; %.0f s\n", cases,
              t.in_scope(), t.passed,
              t.in_scope() == 0 ? "-" : absl::StrFormat("%.1f %%", 100.0 * t.passed / t.in_scope()).c_str(), t.failed,
              t.unsupported, seconds);
  return 0;
}
