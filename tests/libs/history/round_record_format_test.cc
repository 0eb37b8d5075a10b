// The record's text forms: one column table for CSV, empty cells for values not recorded,
// quoting, and JSON lines that parse back to the same record.
#include "pcp/history/round_record_format.h"

#include "gtest/gtest.h"

namespace pcp::history {
namespace {

v1::RoundRecord Sample() {
  v1::RoundRecord r;
  r.set_round(7);
  r.set_start_unix_ms(1000);
  r.set_end_unix_ms(2500);
  r.set_tokens(768);
  r.set_tokens_total(5376);
  r.set_train_loss(2.5);
  r.set_round_s(1.5);
  r.set_outer_step_s(0.01);
  r.set_bytes_down(100);
  r.set_bytes_up(90);
  r.set_outer_lr(0.7);
  r.set_inner_lr(0.001);
  r.add_participants("a");
  r.add_participants("b");
  r.add_missing("c");
  v1::RefusedWorker* w = r.add_refused();
  w->set_supervisor_id("d");
  w->set_reason("too large, norm 9");
  r.set_rounds_since_previous(1);
  r.set_network_wait_s(0.25);
  return r;
}

TEST(RoundRecordFormatTest, CsvHasOneCellPerColumn) {
  EXPECT_EQ(RecordsCsvHeader(),
            "round,start_unix_ms,end_unix_ms,tokens,tokens_total,train_loss,val_loss,round_s,outer_step_s,"
            "bytes_down,bytes_up,outer_lr,inner_lr,participants,missing,refused,rounds_since_previous,"
            "network_wait_s\n");
  EXPECT_EQ(RecordCsvRow(Sample()),
            "7,1000,2500,768,5376,2.5,,1.5,0.01,100,90,0.7,0.001,a;b,c,\"d:too large, norm 9\",1,0.25\n");
  EXPECT_EQ(RecordCells(Sample()).size(), RecordColumns().size());
}

TEST(RoundRecordFormatTest, JsonLinesRoundTrip) {
  v1::RoundRecord r = Sample();
  r.set_val_loss(2.75);
  const std::string line = RecordJsonLine(r);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_NE(line.find("\"val_loss\":2.75"), std::string::npos) << line;
  absl::StatusOr<v1::RoundRecord> back = ParseRecordJsonLine(line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), r.SerializeAsString());
  EXPECT_EQ(ParseRecordJsonLine("{nope").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pcp::history
