// The StableHLO emitter (golden text) and the hand-encoded CompileOptionsProto.

#include "strategy/runtime/pjrt/stablehlo_emitter.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/runtime/pjrt/compile_options.h"

namespace tpusim::runtime::pjrt {
namespace {

using tpusim::testing::IsOk;

TEST(CompileOptionsTest, EncodesReplicasPartitionsAndTheDeviceAssignment) {
  const std::string bytes = EncodeCompileOptions({{3}, {1}});
  // executable_build_options (3) { device_ordinal (1) = -1, num_replicas (4)
  // = 2, num_partitions (5) = 1, device_assignment (9) { replica_count = 2,
  // computation_count = 1, computation_devices { replica_device_ids: [3, 1] } } }
  const std::string want =
      std::string("\x1a\x1b", 2) +
      std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11) +
      std::string("\x20\x02\x28\x01", 4) +
      std::string("\x4a\x0a\x08\x02\x10\x01\x1a\x04\x0a\x02\x03\x01", 12);
  EXPECT_EQ(bytes, want);
}

}  // namespace
}  // namespace tpusim::runtime::pjrt
