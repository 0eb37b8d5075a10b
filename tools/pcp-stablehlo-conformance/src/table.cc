#include "pcp/conformance/table.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace pcp::conformance {
namespace {

// The `count` commonest keys of `m` as "key (n)".
std::string Top(const std::map<std::string, int>& m, size_t count) {
  std::vector<std::pair<int, std::string>> v;
  for (const auto& [k, n] : m) v.emplace_back(-n, k);
  std::sort(v.begin(), v.end());
  std::vector<std::string> parts;
  for (size_t i = 0; i < v.size() && i < count; ++i) parts.push_back(absl::StrCat(v[i].second, " (", -v[i].first, ")"));
  return absl::StrJoin(parts, "; ");
}

std::string Percent(int part, int whole) { return whole == 0 ? "-" : absl::StrFormat("%.1f %%", 100.0 * part / whole); }

std::string Cell(std::string s) { return absl::StrReplaceAll(s, {{"|", "\\|"}, {"\n", " "}}); }

}  // namespace

void Tally::Add(const CaseResult& r) {
  switch (r.verdict) {
    case Verdict::kPassed: ++passed; break;
    case Verdict::kFailed:
      ++failed;
      ++failure_reasons[ReasonClass(r.reason)];
      break;
    case Verdict::kUnsupported:
      ++unsupported;
      for (const std::string& l : r.lacks) ++lacks[l];
      break;
  }
}

std::string ReasonClass(const std::string& reason) {
  // One part per evaluator; a check's part without where and by how much it failed.
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(reason, "; ")) {
    parts.emplace_back(part.substr(0, part.find(", max error ")));
  }
  std::vector<std::string> words;
  for (absl::string_view w : absl::StrSplit(absl::StrJoin(parts, "; "), ' ')) {
    // "file.mlir:12:7:": positions differ between alike failures.
    const size_t a = w.rfind(':', w.size() >= 2 ? w.size() - 2 : 0);
    const size_t b = a == absl::string_view::npos || a == 0 ? absl::string_view::npos : w.rfind(':', a - 1);
    if (absl::EndsWith(w, ":") && b != absl::string_view::npos && b + 1 < a &&
        std::all_of(w.begin() + static_cast<long>(b) + 1, w.end() - 1,
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == ':'; })) {
      continue;
    }
    // Numbers (not the digits of names such as f32 or expect_close@12:5): N.
    std::string out;
    for (size_t i = 0; i < w.size();) {
      const bool boundary = i == 0 || !std::isalnum(static_cast<unsigned char>(w[i - 1]));
      if (boundary && std::isdigit(static_cast<unsigned char>(w[i]))) {
        while (i < w.size() &&
               (std::isdigit(static_cast<unsigned char>(w[i])) || w[i] == '.' || w[i] == 'e' || w[i] == '-' ||
                w[i] == '+' ||
                (w[i] == 'x' && i + 1 < w.size() && std::isdigit(static_cast<unsigned char>(w[i + 1]))))) {
          ++i;
        }
        out += 'N';
      } else {
        out += w[i++];
      }
    }
    words.push_back(std::move(out));
  }
  std::string out = absl::StrJoin(words, " ");
  if (out.size() > 140) out = out.substr(0, 137) + "...";
  return out;
}

void Table::Add(const std::string& suite, const std::string& op, const std::string& case_name, const CaseResult& r) {
  total_.Add(r);
  suites_[suite].Add(r);
  ops_[{suite, op}].Add(r);
  if (r.verdict == Verdict::kFailed) failures_.emplace_back(case_name, r.reason);
}

std::string Table::Markdown(const std::vector<std::string>& header_lines) const {
  std::string md = "# StableHLO conformance\n\n";
  for (const std::string& line : header_lines) absl::StrAppend(&md, line, "\n");
  absl::StrAppend(&md, "\n| suite | cases | in scope | passed | failed | unsupported | passed of in scope |\n",
                  "|---|---:|---:|---:|---:|---:|---:|\n");
  auto total_row = [&](const std::string& name, const Tally& t) {
    absl::StrAppend(&md, "| ", name, " | ", t.in_scope() + t.unsupported, " | ", t.in_scope(), " | ", t.passed, " | ",
                    t.failed, " | ", t.unsupported, " | ", Percent(t.passed, t.in_scope()), " |\n");
  };
  for (const auto& [suite, t] : suites_) total_row(suite, t);
  total_row("**all**", total_);
  absl::StrAppend(&md, "\nTop reasons for failure: ", Cell(Top(total_.failure_reasons, 8)), "\n\n",
                  "Top things lacked (out of scope): ", Cell(Top(total_.lacks, 12)), "\n");
  for (const auto& [suite, unused] : suites_) {
    absl::StrAppend(&md, "\n## ", suite, "\n\n| op | in scope | passed | failed | unsupported | failures | lacks |\n",
                    "|---|---:|---:|---:|---:|---|---|\n");
    for (const auto& [key, t] : ops_) {
      if (key.first != suite) continue;
      absl::StrAppend(&md, "| ", key.second, " | ", t.in_scope(), " | ", t.passed, " | ", t.failed, " | ",
                      t.unsupported, " | ", Cell(Top(t.failure_reasons, 2)), " | ", Cell(Top(t.lacks, 3)), " |\n");
    }
  }
  if (!failures_.empty()) {
    constexpr size_t kMaxListed = 300;
    absl::StrAppend(&md, "\n## Failed cases",
                    failures_.size() > kMaxListed ? absl::StrCat(" (first ", kMaxListed, ")") : "", "\n\n");
    for (size_t i = 0; i < failures_.size() && i < kMaxListed; ++i) {
      absl::StrAppend(&md, "- `", failures_[i].first, "`: ", Cell(failures_[i].second.substr(0, 300)), "\n");
    }
  }
  return md;
}

}  // namespace pcp::conformance
