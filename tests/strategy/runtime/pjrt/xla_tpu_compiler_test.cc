// The XLA:TPU compiler through the pinned libtpu (TPUSIM_LIBTPU_PATH): the
// probe's program compiled for v4 and v5e topologies without a TPU, with the
// compiler's exact memory numbers, and each error the issue lists.

#include "strategy/runtime/pjrt/xla_tpu_compiler.h"

#include <stdlib.h>

#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::runtime::pjrt {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

XlaTpuCompileRequest ProbeRequest(const char* generation, int x, int y,
                                  int z) {
  XlaTpuCompileRequest request;
  request.topology = TpuTopologyName(generation, x, y, z);
  request.topology_options = TopologyOptionsFor(generation);
  request.program = LibtpuProbeProgram();
  request.device_assignment = {{0}, {1}, {2}, {3}};
  request.time_limit_seconds = 300;
  return request;
}

TEST(XlaTpuCompilerTest, TopologyNames) {
  EXPECT_EQ(TpuTopologyName("v4", 2, 2, 1), "v4:2x2x1");
  EXPECT_EQ(TpuTopologyName("v5p", 4, 4, 8), "v5p:4x4x8");
  EXPECT_EQ(TpuTopologyName("v5e", 4, 2, 1), "v5e:4x2");
  EXPECT_EQ(TpuTopologyName("v3", 4, 4, 1), "v3:4x4");
  EXPECT_EQ(TopologyOptionsFor("v4").size(), 1u);
  EXPECT_EQ(TopologyOptionsFor("v4")[0].second, "megacore");
  EXPECT_TRUE(TopologyOptionsFor("v5e").empty());
}

// The probe: both topologies compile; the compiler's per-device memory is the
// two f32 arguments (128*256*4 + 256*512*4 bytes) and the f32 output
// (128*512*4), no temporaries; the optimized module comes back as
// HloModuleProtoWithConfig; cost analysis counts the matmul's 2*128*256*512
// flops plus one add per element of the all-reduce (128*512).
TEST(XlaTpuCompilerTest, ProbeCompilesForV4AndV5e) {
  for (const char* generation : {"v4", "v5e"}) {
    SCOPED_TRACE(generation);
    auto r = CompileForTpu(DefaultLibtpuPath(), ProbeRequest(generation, 2, 2, 1));
    ASSERT_THAT(r.status(), IsOk());
    EXPECT_EQ(r->plugin_version,
              "PJRT C API 0.81 (plugin) / 0.81 (tpusim's header)");
    EXPECT_THAT(r->devices, SizeIs(4));
    EXPECT_EQ(r->devices[3],
              "TpuDevice(id=3, process_index=0, coords=(1,1,0), "
              "core_on_chip=0)");
    EXPECT_EQ(r->optimized_format, "hlo_with_config");
    EXPECT_GT(r->optimized_program.size(), 1000u);
    EXPECT_EQ(r->memory.arguments, 655360);
    EXPECT_EQ(r->memory.outputs, 262144);
    EXPECT_EQ(r->memory.alias, 0);
    EXPECT_EQ(r->memory.temporaries, 0);
    EXPECT_GT(r->memory.generated_code, 0);
    bool found_flops = false;
    for (const auto& [name, value] : r->cost_analysis) {
      if (name == "flops") {
        found_flops = true;
        EXPECT_EQ(value, 2.0 * 128 * 256 * 512 + 128 * 512);
      }
    }
    EXPECT_TRUE(found_flops);
  }
}

TEST(XlaTpuCompilerTest, TopologyTheCompilerRejects) {
  XlaTpuCompileRequest request = ProbeRequest("v4", 2, 2, 1);
  request.topology = "v4:3x3x3";
  EXPECT_THAT(CompileForTpu(DefaultLibtpuPath(), request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("libtpu rejects topology \"v4:3x3x3\": "
                                 "Topology layout \"v4:3x3x3\" is not "
                                 "divisible")));
  request.topology = "bogus";
  EXPECT_THAT(CompileForTpu(DefaultLibtpuPath(), request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("libtpu rejects topology \"bogus\": Your TPU "
                                 "topology name bogus is invalid")));
}

TEST(XlaTpuCompilerTest, ProgramTheCompilerRejects) {
  XlaTpuCompileRequest request = ProbeRequest("v5e", 2, 2, 1);
  request.program = "module { func.func @main() -> tensor<f32> { return } }";
  auto r = CompileForTpu(DefaultLibtpuPath(), request);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("PJRT_Compile: "));
}

TEST(XlaTpuCompilerTest, DeviceOutsideTheTopology) {
  XlaTpuCompileRequest request = ProbeRequest("v5e", 2, 2, 1);
  request.device_assignment = {{0}, {1}, {2}, {4}};
  EXPECT_THAT(CompileForTpu(DefaultLibtpuPath(), request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "xla-tpu compile: device 4 is not in topology "
                       "\"v5e:2x2\", which has 4 devices (0..3)"));
}

TEST(XlaTpuCompilerTest, MissingLibtpu) {
  XlaTpuCompileRequest request = ProbeRequest("v5e", 2, 2, 1);
  EXPECT_THAT(CompileForTpu("", request).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("libtpu is not installed: run tools/setup.sh")));
  EXPECT_THAT(CompileForTpu("/nonexistent/libtpu.so", request).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("libtpu \"/nonexistent/libtpu.so\" does not "
                                 "exist: run tools/setup.sh")));
  // A file that is not a PJRT plugin (the loader's check, prefixed "libtpu").
  EXPECT_THAT(CompileForTpu("/etc/hostname", request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("libtpu: pjrt plugin \"/etc/hostname\" is "
                                 "not a loadable shared object")));
}

TEST(XlaTpuCompilerTest, DeviceCoordinates) {
  auto coords = ParseTpuDeviceCoords(
      "TpuDevice(id=5, process_index=0, coords=(0,1,0), core_on_chip=1)");
  ASSERT_THAT(coords.status(), IsOk());
  EXPECT_EQ(*coords, (std::array<int, 4>{0, 1, 0, 1}));
  EXPECT_THAT(ParseTpuDeviceCoords("CpuDevice(id=0)").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("has no coords=(x,y,z) and core_on_chip=c")));
  // v3: two cores per chip; the device at chip (1,1) core 1 is id 7.
  XlaTpuCompileRequest request = ProbeRequest("v3", 2, 2, 1);
  request.device_assignment.clear();
  request.device_coords = {{{1, 1, 0, 1}}, {{0, 0, 0, 0}}, {{1, 0, 0, 0}},
                           {{0, 1, 0, 1}}};
  auto r = CompileForTpu(DefaultLibtpuPath(), request);
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_EQ(r->device_assignment,
            (std::vector<std::vector<int64_t>>{{7}, {0}, {2}, {5}}));
  request.device_coords[3] = {{2, 0, 0, 0}};
  EXPECT_THAT(CompileForTpu(DefaultLibtpuPath(), request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "xla-tpu compile: topology \"v3:2x2\" has no device "
                       "at coords (2,0,0) core 0"));
}

TEST(XlaTpuCompilerTest, AcceleratorTypeSetIsAnErrorNotAnAbort) {
  ::setenv("TPU_ACCELERATOR_TYPE", "v4-8", 1);
  auto r = CompileForTpu(DefaultLibtpuPath(), ProbeRequest("v4", 2, 2, 1));
  ::unsetenv("TPU_ACCELERATOR_TYPE");
  EXPECT_THAT(r.status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("TPU_ACCELERATOR_TYPE=v4-8 is set: unset it")));
}

// Last: the compile that exceeds its limit keeps running on a detached thread.
TEST(XlaTpuCompilerTest, TimeLimit) {
  XlaTpuCompileRequest request = ProbeRequest("v4", 4, 4, 4);
  request.device_assignment.clear();
  for (int64_t d = 0; d < 64; ++d) request.device_assignment.push_back({d});
  request.time_limit_seconds = 1e-6;
  EXPECT_THAT(CompileForTpu(DefaultLibtpuPath(), request).status(),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       "xla-tpu compile for topology \"v4:4x4x4\" exceeded its "
                       "time limit of 1e-06 s (--compile-time-limit)"));
}

}  // namespace
}  // namespace tpusim::runtime::pjrt
