// Docs match behaviour: the "Metrics" section of docs/operations.md names every metric of the
// catalog, and its table is pcp-metrics-catalog's output as it is now (labels, buckets and
// help included), so a changed metric cannot leave a stale row behind.
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/metrics/catalog.h"

namespace pcp::metrics {
namespace {

constexpr char kDoc[] = "docs/operations.md";

TEST(ReadmeTest, ListsEveryMetric) {
  absl::StatusOr<std::string> doc = ReadFile(absl::StrCat(PCP_SOURCE_DIR "/", kDoc));
  ASSERT_TRUE(doc.ok()) << doc.status();
  const size_t section = doc->find("\n## Metrics");
  ASSERT_NE(section, std::string::npos) << kDoc << " has no '## Metrics' section";
  const std::string text = doc->substr(section);
  for (const MetricInfo& m : kMetrics) {
    EXPECT_TRUE(absl::StrContains(text, absl::StrCat("`", m.name, "`")))
        << m.name << " is missing from " << kDoc
        << "'s Metrics section; paste build/libs/metrics/pcp-metrics-catalog's output";
  }
  EXPECT_TRUE(absl::StrContains(text, CatalogMarkdown()))
      << "the table in " << kDoc << "'s Metrics section is not build/libs/metrics/pcp-metrics-catalog's "
      << "output; paste it again";
}

}  // namespace
}  // namespace pcp::metrics
