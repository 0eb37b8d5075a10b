// pcp-metrics-catalog: prints every metric PCP exports as a Markdown table (the README's
// "Metrics" section is this output).
//
//   build/libs/metrics/pcp-metrics-catalog > /tmp/metrics.md
#include <cstdio>

#include "pcp/metrics/catalog.h"

int main() {
  std::fputs(pcp::metrics::CatalogMarkdown().c_str(), stdout);
  return 0;
}
