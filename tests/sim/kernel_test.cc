// Proves the test harness runs every TEST in its own process: the first two
// tests each elaborate and simulate a SystemC model, which SystemC allows only
// once per process, and both pass under ctest. Run the binary by hand (one
// process) and the guard reports the second kernel as FailedPrecondition
// instead of crashing.

#include "sim/kernel.h"

#include <memory>
#include <systemc>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::sim {
namespace {

using ::testing::HasSubstr;
using ::tpusim::testing::StatusIs;

// Two processes that hand a token back and forth, each hop taking `hop` of
// simulated time.
SC_MODULE(PingPong) {
  sc_core::sc_event ping, pong;
  int hops = 0;
  int max_hops;
  sc_core::sc_time hop;

  SC_HAS_PROCESS(PingPong);
  PingPong(sc_core::sc_module_name name, int max_hops, sc_core::sc_time hop)
      : sc_core::sc_module(name), max_hops(max_hops), hop(hop) {
    SC_METHOD(OnPing);
    sensitive << ping;
    dont_initialize();
    SC_METHOD(OnPong);
    sensitive << pong;
    dont_initialize();
    SC_THREAD(Start);
  }
  void Start() { ping.notify(hop); }
  void OnPing() {
    if (++hops < max_hops) pong.notify(hop);
  }
  void OnPong() {
    if (++hops < max_hops) ping.notify(hop);
  }
};

absl::StatusOr<common::Picoseconds> RunPingPong(
    int hops, std::unique_ptr<PingPong>& model) {
  return RunKernel(
      [&]() -> absl::Status {
        model = std::make_unique<PingPong>(
            "ping_pong", hops, sc_core::sc_time(250, sc_core::SC_NS));
        return absl::OkStatus();
      },
      std::nullopt);
}

TEST(KernelTest, FirstModelElaboratesAndRunsInItsOwnProcess) {
  std::unique_ptr<PingPong> model;
  absl::StatusOr<common::Picoseconds> end = RunPingPong(10, model);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(model->hops, 10);
  EXPECT_EQ(end->count(), 10 * 250 * 1000);  // 10 hops of 250 ns, in ps
}

TEST(KernelTest, SecondModelElaboratesAndRunsInItsOwnProcess) {
  std::unique_ptr<PingPong> model;
  absl::StatusOr<common::Picoseconds> end = RunPingPong(4, model);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(model->hops, 4);
  EXPECT_EQ(end->count(), 4 * 250 * 1000);
}

TEST(KernelTest, LimitStopsSimulatedTime) {
  std::unique_ptr<PingPong> model;
  absl::StatusOr<common::Picoseconds> end = RunKernel(
      [&]() -> absl::Status {
        model = std::make_unique<PingPong>("ping_pong", 1000,
                                           sc_core::sc_time(1, sc_core::SC_US));
        return absl::OkStatus();
      },
      common::Picoseconds::FromNanoseconds(5500));
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->count(), 5'500'000);
  EXPECT_EQ(model->hops, 5);  // hops at 1..5 us; the 6th would be at 6 us
}

TEST(KernelTest, ASecondKernelInOneProcessIsRefused) {
  std::unique_ptr<PingPong> model;
  ASSERT_TRUE(RunPingPong(2, model).ok());
  std::unique_ptr<PingPong> second;
  EXPECT_THAT(RunPingPong(2, second),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("one pod per process")));
}

TEST(KernelTest, ElaborationFailureIsReturnedAndNothingRuns) {
  absl::StatusOr<common::Picoseconds> end = RunKernel(
      [] { return absl::InvalidArgumentError("pod.x=0, must be >= 1"); },
      std::nullopt);
  EXPECT_THAT(end, StatusIs(absl::StatusCode::kInvalidArgument,
                            "pod.x=0, must be >= 1"));
}

TEST(KernelSessionTest, ElaboratesOnceAndStepsInIncrements) {
  std::unique_ptr<PingPong> model;
  absl::StatusOr<std::unique_ptr<KernelSession>> session =
      KernelSession::Create([&]() -> absl::Status {
        model = std::make_unique<PingPong>("ping_pong", 10,
                                           sc_core::sc_time(1, sc_core::SC_US));
        return absl::OkStatus();
      });
  ASSERT_TRUE(session.ok()) << session.status();
  KernelSession& s = **session;
  EXPECT_EQ(s.Now().count(), 0);
  absl::StatusOr<common::Picoseconds> now =
      s.RunFor(common::Picoseconds::FromNanoseconds(2500));
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(now->count(), 2'500'000);
  EXPECT_EQ(model->hops, 2);
  now = s.RunFor(common::Picoseconds::FromNanoseconds(1000));
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->count(), 3'500'000);
  EXPECT_EQ(model->hops, 3);
  EXPECT_TRUE(s.HasPendingActivity());
  now = s.RunUntilIdle();
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->count(), 10'000'000);  // the last hop, not later
  EXPECT_EQ(model->hops, 10);
  EXPECT_FALSE(s.HasPendingActivity());
  now = s.RunUntilIdle();  // idle: stays put, no SystemC warning
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->count(), 10'000'000);
  now = s.RunFor(common::Picoseconds(500));  // time still advances on request
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->count(), 10'000'500);
}

TEST(KernelSessionTest, NegativeStepsAndSecondSessionsAreRefused) {
  absl::StatusOr<std::unique_ptr<KernelSession>> session =
      KernelSession::Create([] { return absl::OkStatus(); });
  ASSERT_TRUE(session.ok());
  EXPECT_THAT((*session)->RunFor(common::Picoseconds(-1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "kernel step of -1 ps: must be >= 0"));
  EXPECT_THAT(KernelSession::Create([] { return absl::OkStatus(); }),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("one pod per process")));
}

}  // namespace
}  // namespace tpusim::sim
