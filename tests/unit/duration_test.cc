// util/duration.h: the one parser of Go duration strings (cache, minruntime, pod-grouper, CLI).
#include "util/duration.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace gantry {
namespace {

int64_t Ns(std::string_view text, DurationUnits units = DurationUnits::kGo) {
  Result<int64_t> r = ParseGoDuration(text, units);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error());
  return r.ok() ? r.value() : -1;
}

TEST(DurationTest, ParsesGoSyntaxExactly) {
  EXPECT_EQ(Ns("0"), 0);
  EXPECT_EQ(Ns("-0"), 0);
  EXPECT_EQ(Ns("300ms"), 300'000'000);
  EXPECT_EQ(Ns("1h30m"), 5'400'000'000'000);
  EXPECT_EQ(Ns("2.5s"), 2'500'000'000);
  EXPECT_EQ(Ns(".5s"), 500'000'000);
  EXPECT_EQ(Ns("1.s"), 1'000'000'000);
  EXPECT_EQ(Ns("-10s"), -10'000'000'000);
  EXPECT_EQ(Ns("+10s"), 10'000'000'000);
  EXPECT_EQ(Ns("1us"), 1'000);
  EXPECT_EQ(Ns("1\xC2\xB5s"), 1'000);
  EXPECT_EQ(Ns("1ns"), 1);
  EXPECT_EQ(Ns("2562047h47m16.854775807s"), INT64_MAX);
  EXPECT_EQ(Ns("-2562047h47m16.854775808s"), INT64_MIN);
}

TEST(DurationTest, DaysAndWeeksOnlyWhenAsked) {
  EXPECT_EQ(Ns("2d", DurationUnits::kGoDaysAndWeeks), 2 * 86'400'000'000'000);
  EXPECT_EQ(Ns("1w", DurationUnits::kGoDaysAndWeeks), 7 * 86'400'000'000'000);
  Result<int64_t> r = ParseGoDuration("2d");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "time: unknown unit \"d\" in duration \"2d\"");
}

TEST(DurationTest, RefusesWhatGoRefusesWithGosMessages) {
  for (const char* bad : {"", "-", "abc", "5 minutes", ".s", "1..5s", "s", "9223372036854775808ns",
                          "2562047h47m16.854775808s", "1h-1m"}) {
    EXPECT_FALSE(ParseGoDuration(bad).ok()) << bad;
    EXPECT_FALSE(ParseGoDurationSeconds(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseGoDuration("10").error(), "time: missing unit in duration \"10\"");
  EXPECT_EQ(ParseGoDuration("abc").error(), "time: invalid duration \"abc\"");
}

TEST(DurationTest, SecondsAndFormatRoundTrip) {
  EXPECT_EQ(ParseGoDurationSeconds("1h30m").value(), 5400.0);
  EXPECT_EQ(ParseGoDurationSeconds("-1s").value(), -1.0);
  for (const char* text : {"0s", "1ns", "1.5µs", "300ms", "2.5s", "5m0s", "1h30m0s", "-10s",
                           "2562047h47m16.854775807s", "-2562047h47m16.854775808s"}) {
    EXPECT_EQ(FormatGoDuration(Ns(text)), text);
  }
}

}  // namespace
}  // namespace gantry
