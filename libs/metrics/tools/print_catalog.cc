// pcp-metrics-catalog: prints every metric PCP exports as a Markdown table (the "Metrics"
// section of docs/operations.md is this output; metrics_readme_test checks it).
//
//   build/libs/metrics/pcp-metrics-catalog > /tmp/metrics.md
#include <cstdio>

#include "pcp/metrics/catalog.h"

int main() {
  std::fputs(pcp::metrics::CatalogMarkdown().c_str(), stdout);
  return 0;
}
