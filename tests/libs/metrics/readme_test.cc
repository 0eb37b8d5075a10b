// Docs match behaviour: README.md's "Metrics" section names every metric of the catalog
// (the table is pcp-metrics-catalog's output).
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/metrics/catalog.h"

namespace pcp::metrics {
namespace {

TEST(ReadmeTest, ListsEveryMetric) {
  absl::StatusOr<std::string> readme = ReadFile(PCP_SOURCE_DIR "/README.md");
  ASSERT_TRUE(readme.ok()) << readme.status();
  const size_t section = readme->find("\n## Metrics");
  ASSERT_NE(section, std::string::npos) << "README.md has no '## Metrics' section";
  const std::string text = readme->substr(section);
  for (const MetricInfo& m : kMetrics) {
    EXPECT_TRUE(absl::StrContains(text, absl::StrCat("`", m.name, "`")))
        << m.name << " is missing from README.md's Metrics section; paste build/libs/metrics/pcp-metrics-catalog's output";
  }
}

}  // namespace
}  // namespace pcp::metrics
