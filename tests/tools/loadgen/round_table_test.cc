#include "pcp/loadgen/round_table.h"

#include "gtest/gtest.h"

namespace pcp::loadgen {
namespace {

LoadgenReport Report() {
  LoadgenReport r;
  r.shepherd = "127.0.0.1:7070";
  r.job_id = "job-0001";
  r.workers = 32;
  r.parameters = 10000000;
  r.delta_bytes = 40000000;
  r.compute_s = 2;
  r.shepherd_pid = 42;
  r.end_reason = "3 rounds done";
  RoundRow a{.round = 1,
             .workers = 32,
             .sent = 32,
             .drops = 1,
             .overhead_s = 0.25,
             .outer_step_ms = 120.5,
             .round_s = 4.5,
             .rss_bytes = int64_t{1536} << 20,
             .hwm_bytes = int64_t{2048} << 20,
             .cpu_s = 3.5,
             .window_s = 2.0,
             .bytes_in = 100000000,
             .bytes_out = 50000000};
  RoundRow b{.round = 2, .sent = 31};  // unknown figures
  r.rows = {a, b};
  return r;
}

TEST(RoundTableTest, TableHasEveryColumnAndDashesForUnknowns) {
  const std::string t = FormatTable(Report());
  for (const char* column : {"round", "workers", "sent", "drops", "overhead_s", "outer_ms", "round_s", "rss_mib",
                             "hwm_mib", "cpu_s", "in_mbs", "out_mbs"}) {
    EXPECT_NE(t.find(column), std::string::npos) << column << "\n" << t;
  }
  EXPECT_NE(t.find("last simulated worker's delta sent"), std::string::npos) << t;
  // Round 1: 0.250 s overhead, 120.5 ms, 1536 MiB, 2048 MiB, 50.0 MB/s in, 25.0 MB/s out.
  const std::string line = TableLine(Report().rows[0]);
  for (const char* v : {"0.250", "120.5", "1536", "2048", "3.50", "50.0", "25.0"}) {
    EXPECT_NE(line.find(v), std::string::npos) << v << " in " << line;
  }
  const std::string unknown = TableLine(Report().rows[1]);
  EXPECT_NE(unknown.find(" - "), std::string::npos) << unknown;
  EXPECT_NE(t.find("# stopped: 3 rounds done"), std::string::npos);
}

TEST(RoundTableTest, JsonHasTheSameFiguresAndNullForUnknowns) {
  const Json j = ReportJson(Report());
  absl::StatusOr<Json> back = Json::Parse(j.Serialize());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Find("workers")->int_value(), 32);
  EXPECT_EQ(back->Find("parameters")->int_value(), 10000000);
  const Json& rounds = *back->Find("rounds");
  ASSERT_EQ(rounds.size(), 2u);
  const Json& r1 = rounds.array_items()[0];
  EXPECT_EQ(r1.Find("workers")->int_value(), 32);
  EXPECT_DOUBLE_EQ(r1.Find("overhead_s")->number_value(), 0.25);
  EXPECT_DOUBLE_EQ(r1.Find("outer_step_ms")->number_value(), 120.5);
  EXPECT_EQ(r1.Find("rss_bytes")->int_value(), int64_t{1536} << 20);
  EXPECT_DOUBLE_EQ(r1.Find("in_bytes_per_s")->number_value(), 50e6);
  EXPECT_DOUBLE_EQ(r1.Find("out_bytes_per_s")->number_value(), 25e6);
  const Json& r2 = rounds.array_items()[1];
  EXPECT_TRUE(r2.Find("workers")->is_null());
  EXPECT_TRUE(r2.Find("overhead_s")->is_null());
  EXPECT_TRUE(r2.Find("cpu_s")->is_null());
  EXPECT_TRUE(back->Find("error")->is_null());
}

}  // namespace
}  // namespace pcp::loadgen
