// The one Δ verdict function (services/shepherd/src/screen.h): every path judges alike.
#include "screen.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace pcp::shepherd {
namespace {

using diloco::RefusalReason;
using diloco::ScreenVerdict;

diloco::ScreeningOptions Options(diloco::ScreenAction action) {
  diloco::ScreeningOptions o;
  o.norm_k = 2.0;
  o.max_norm = 100.0;
  o.action = action;
  return o;
}

TEST(ScreenTest, MeasuredAndDeclaredNormsAreJudgedAlike) {
  const diloco::DeltaScreen screen(Options(diloco::ScreenAction::kClip));
  const diloco::ScreenThreshold t = screen.RoundThreshold(std::vector<double>{1.0, 1.0, 1.0});
  for (double norm : {0.5, 2.0, 4.0, 1e9}) {
    const ScreenVerdict measured = Screen(screen, t, DeltaNorm::Measured(norm));
    const ScreenVerdict declared = Screen(screen, t, DeltaNorm::Declared(norm));
    const ScreenVerdict judged = screen.Judge(norm, t);
    EXPECT_EQ(measured.action, judged.action) << norm;
    EXPECT_EQ(declared.action, judged.action) << norm;
    EXPECT_EQ(measured.reason, judged.reason) << norm;
    EXPECT_DOUBLE_EQ(measured.scale, judged.scale) << norm;
  }
  EXPECT_EQ(Screen(screen, t, DeltaNorm::Measured(0.5)).action, ScreenVerdict::kAccept);
  const ScreenVerdict clipped = Screen(screen, t, DeltaNorm::Measured(4.0));
  EXPECT_EQ(clipped.action, ScreenVerdict::kClip);
  EXPECT_DOUBLE_EQ(clipped.scale, 0.5);
  EXPECT_TRUE(Admitted(clipped));
  EXPECT_TRUE(Refused(clipped));
}

TEST(ScreenTest, NotFiniteIsRejectedEvenWhenClipping) {
  const diloco::DeltaScreen screen(Options(diloco::ScreenAction::kClip));
  for (double norm : {std::numeric_limits<double>::infinity(), std::nan("")}) {
    const ScreenVerdict v = Screen(screen, ArrivalThreshold(screen), DeltaNorm::Measured(norm));
    EXPECT_EQ(v.action, ScreenVerdict::kReject);
    EXPECT_EQ(v.reason, RefusalReason::kNonFinite);
    EXPECT_FALSE(Admitted(v));
    EXPECT_TRUE(Refused(v));
  }
}

TEST(ScreenTest, BrokenDeclarationIsRejectedWhateverTheNorm) {
  const diloco::DeltaScreen screen(Options(diloco::ScreenAction::kClip));
  const diloco::ScreenThreshold t = ArrivalThreshold(screen);  // no history: the cap only
  EXPECT_DOUBLE_EQ(t.value, 100.0);
  const ScreenVerdict v = Screen(screen, t, DeltaNorm::BrokeDeclaration());
  EXPECT_EQ(v.action, ScreenVerdict::kReject);
  EXPECT_EQ(v.reason, RefusalReason::kDeclaredNorm);
  EXPECT_DOUBLE_EQ(v.threshold, 100.0);
  EXPECT_DOUBLE_EQ(v.norm, 0.0);
}

TEST(ScreenTest, ArrivalThresholdIgnoresTheRoundsOwnNorms) {
  diloco::DeltaScreen screen(Options(diloco::ScreenAction::kReject));
  EXPECT_DOUBLE_EQ(ArrivalThreshold(screen).value, 100.0);
  screen.EndRound(std::vector<double>{3.0, 3.0, 3.0});
  // Past rounds' median (3) x norm_k (2) is below the cap.
  EXPECT_DOUBLE_EQ(ArrivalThreshold(screen).value, 6.0);
  const ScreenVerdict v = Screen(screen, ArrivalThreshold(screen), DeltaNorm::Declared(7.0));
  EXPECT_EQ(v.action, ScreenVerdict::kReject);
  EXPECT_EQ(v.reason, RefusalReason::kNorm);
}

}  // namespace
}  // namespace pcp::shepherd
