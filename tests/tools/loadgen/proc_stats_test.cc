#include "pcp/loadgen/proc_stats.h"

#include <unistd.h>

#include <vector>

#include "gtest/gtest.h"

namespace pcp::loadgen {
namespace {

TEST(ParseProcStatusTest, ReadsRssAndHwmInBytes) {
  absl::StatusOr<ProcMemory> m =
      ParseProcStatus("Name:\tpcp-shepherd\nVmPeak:\t 999 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nThreads:\t9\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rss_bytes, 1024 * 1024);
  EXPECT_EQ(m->hwm_bytes, 2048 * 1024);
}

TEST(ParseProcStatusTest, RefusesMissingOrMalformedLines) {
  absl::StatusOr<ProcMemory> no_rss = ParseProcStatus("VmHWM:\t 10 kB\n");
  ASSERT_FALSE(no_rss.ok());
  EXPECT_NE(no_rss.status().message().find("VmRSS"), std::string::npos) << no_rss.status();
  EXPECT_FALSE(ParseProcStatus("VmHWM:\t 10 kB\nVmRSS:\t ten kB\n").ok());
  EXPECT_FALSE(ParseProcStatus("VmHWM:\t 10 kB\nVmRSS:\t 10 MB\n").ok());
  EXPECT_FALSE(ParseProcStatus("").ok());
}

TEST(ParseProcStatCpuSecondsTest, AddsUtimeAndStimeAfterTheCommandName) {
  // The command name holds spaces and a ')': fields are counted after the last ')'.
  const std::string stat =
      "4242 (pcp shep)herd) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 9 0 1000 5000 300";
  absl::StatusOr<double> s = ParseProcStatCpuSeconds(stat, 100);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(*s, 4.0);  // (250 + 150) / 100
}

TEST(ParseProcStatCpuSecondsTest, RefusesShortOrMalformedText) {
  EXPECT_FALSE(ParseProcStatCpuSeconds("4242 (x) S 1 2 3", 100).ok());
  EXPECT_FALSE(ParseProcStatCpuSeconds("no parenthesis here", 100).ok());
  EXPECT_FALSE(ParseProcStatCpuSeconds("1 (x) S 1 1 1 0 -1 0 0 0 0 0 u s 0", 100).ok());
  EXPECT_FALSE(ParseProcStatCpuSeconds("1 (x) S 1 1 1 0 -1 0 0 0 0 0 1 1 0", 0).ok());
}

TEST(ReadProcTest, ReadsThisProcessAndSeesItsMemoryAndCpuGrow) {
  absl::StatusOr<ProcMemory> before = ReadProcMemory(getpid());
  absl::StatusOr<double> cpu_before = ReadProcCpuSeconds(getpid());
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(cpu_before.ok()) << cpu_before.status();
  // 64 MiB touched: resident memory and the high-water mark grow by about that.
  std::vector<char> block(64 << 20, 1);
  volatile double sink = 0;
  for (int i = 0; i < 30000000; ++i) sink = sink + block[static_cast<size_t>(i) % block.size()] * 0.5;
  absl::StatusOr<ProcMemory> after = ReadProcMemory(getpid());
  absl::StatusOr<double> cpu_after = ReadProcCpuSeconds(getpid());
  ASSERT_TRUE(after.ok() && cpu_after.ok());
  EXPECT_GE(after->rss_bytes - before->rss_bytes, 48 << 20);
  EXPECT_GE(after->hwm_bytes, after->rss_bytes);
  EXPECT_GT(*cpu_after, *cpu_before);
}

TEST(ReadProcTest, AProcessThatDoesNotExistIsNotFound) {
  absl::StatusOr<ProcMemory> m = ReadProcMemory(0x3fffffff);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound) << m.status();
}

}  // namespace
}  // namespace pcp::loadgen
