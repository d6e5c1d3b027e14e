// How every component ends: kube::TerminationSignals. The cases that send the process a real
// SIGTERM / SIGINT run in a child process of their own (death tests).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "kube/termination.h"

namespace gantry::kube {
namespace {

// Sends `sig` to the process and exits 0 if the stop signal was raised by it, with the signal's
// name handed to the callback; 1 otherwise.
[[noreturn]] void SignalAndExit(int sig, const char* want) {
  StopSignal stop;
  std::string seen;
  bool received = false;
  {
    TerminationSignals signals(stop, [&seen](const char* name) { seen = name; });
    kill(getpid(), sig);
    const bool stopped = stop.WaitFor(std::chrono::seconds(10));
    received = stopped && signals.received();
  }
  std::_Exit(received && seen == want ? 0 : 1);
}

TEST(TerminationSignalsDeathTest, SigtermRaisesTheStopSignal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(SignalAndExit(SIGTERM, "SIGTERM"), ::testing::ExitedWithCode(0), "");
}

TEST(TerminationSignalsDeathTest, SigintRaisesTheStopSignal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(SignalAndExit(SIGINT, "SIGINT"), ::testing::ExitedWithCode(0), "");
}

// A component that ends by itself (leadership lost) is not "received", and the destructor ends
// the signal thread without any signal.
TEST(TerminationSignalsTest, EndingWithoutASignalIsNotReceived) {
  StopSignal stop;
  bool callback_ran = false;
  {
    TerminationSignals signals(stop, [&callback_ran](const char*) { callback_ran = true; });
    EXPECT_FALSE(signals.received());
    EXPECT_FALSE(stop.stopped());
  }
  EXPECT_TRUE(stop.stopped());
  EXPECT_FALSE(callback_ran);
}

}  // namespace
}  // namespace gantry::kube
