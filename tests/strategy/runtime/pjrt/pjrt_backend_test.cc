// PjrtBackend on XLA's CPU PJRT plugin (the pinned xla-cpu-pjrt wheel): loading
// errors, devices, and programs whose values must equal HostBackend's.

#include "strategy/runtime/pjrt/pjrt_backend.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/runtime/host_backend.h"
#include "strategy/runtime/pjrt/pjrt_plugin.h"
#include "strategy/runtime/slice.h"
#include "tests/strategy/runtime/pjrt/emitter_programs.h"

namespace tpusim::runtime::pjrt {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tpusim::testing::IsOk;
using tpusim::testing::StatusIs;

std::vector<DeviceDescription> Devices(int n) {
  std::vector<DeviceDescription> out;
  for (int i = 0; i < n; ++i) {
    DeviceDescription d;
    d.id = i;
    d.ordinal = i;
    d.coords = {i, 0, 0};
    d.kind = "cpu";
    out.push_back(d);
  }
  return out;
}

std::unique_ptr<PjrtBackend> Make(int n) {
  PjrtBackendOptions o;
  o.plugin_path = DefaultPjrtPluginPath();
  o.devices = Devices(n);
  o.cpu_device_count = n;
  absl::StatusOr<std::unique_ptr<PjrtBackend>> b = PjrtBackend::Create(o);
  EXPECT_THAT(b, IsOk());
  return b.ok() ? std::move(*b) : nullptr;
}

// Runs `program` on `backend` with per-replica argument tensors; the outputs
// come back to the host.
std::vector<std::vector<Tensor>> RunProgram(Backend& backend, const Program& program,
                                     const std::vector<std::vector<Tensor>>& args) {
  const int R = program.num_replicas();
  auto exe = backend.Compile(program, {R, 1});
  EXPECT_THAT(exe, IsOk());
  if (!exe.ok()) return {};
  std::vector<std::vector<std::unique_ptr<Buffer>>> owned(R);
  std::vector<std::vector<Buffer*>> per_replica(R);
  SpmdAssignment assignment;
  for (int r = 0; r < R; ++r) {
    assignment.replica_devices.push_back({r});
    for (const Tensor& t : args[r]) {
      auto b = backend.TransferToDevice(r, t);
      EXPECT_THAT(b, IsOk());
      per_replica[r].push_back(b->get());
      owned[r].push_back(std::move(*b));
    }
  }
  auto outs = backend.ExecuteSpmd(**exe, assignment, per_replica);
  EXPECT_THAT(outs, IsOk());
  std::vector<std::vector<Tensor>> result(R);
  if (!outs.ok()) return result;
  for (int r = 0; r < R; ++r) {
    for (auto& b : (*outs)[r]) {
      auto t = backend.TransferFromDevice(*b);
      EXPECT_THAT(t, IsOk());
      result[r].push_back(*t);
    }
  }
  return result;
}

TEST(PjrtPluginTest, MissingPathIsNotFound) {
  EXPECT_THAT(PjrtPlugin::Load("/nonexistent/xla_cpu_pjrt.so").status(),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("/nonexistent/xla_cpu_pjrt.so"),
                             HasSubstr("does not exist"))));
}

TEST(PjrtPluginTest, ATextFileIsNotASharedObject) {
  const std::string path = ::testing::TempDir() + "not_a_plugin.so";
  std::ofstream(path) << "hello\n";
  EXPECT_THAT(PjrtPlugin::Load(path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not a loadable shared object")));
}

TEST(PjrtPluginTest, ASharedObjectWithoutGetPjrtApiIsRejected) {
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&std::terminate), &info), 0);
  EXPECT_THAT(PjrtPlugin::Load(info.dli_fname).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("has no GetPjrtApi symbol")));
}

// The fake plugin (fake_pjrt_plugin.cc) with one defect, under its own path
// (a plugin loads once per process per path).
std::string FakePlugin(const std::string& mode) {
  setenv("TPUSIM_FAKE_PJRT_MODE", mode.c_str(), 1);
  const std::string path = ::testing::TempDir() + "fake_pjrt_" + mode + ".so";
  // Never rewrites a copy already loaded (mapped) by this process.
  std::error_code ec;
  std::filesystem::copy_file(TPUSIM_FAKE_PJRT_PLUGIN, path,
                             std::filesystem::copy_options::skip_existing, ec);
  EXPECT_FALSE(ec) << ec.message();
  return path;
}

PjrtBackendOptions FakeOptions(const std::string& mode) {
  PjrtBackendOptions o;
  o.plugin_path = FakePlugin(mode);
  o.devices = Devices(1);
  return o;
}

// A TPU plugin gives each device's coordinates: slice device i runs on the
// plugin device at its coordinates, whatever the plugin's order.
// The fake TPU plugin in `mode` under a v4-8 slice (2x2x1 chips).
PjrtBackendOptions FakeTpuOptions(const std::string& mode) {
  PjrtBackendOptions o;
  o.plugin_path = FakePlugin(mode);
  absl::StatusOr<SliceLayout> v4 = ParseSlice("v4-8");
  EXPECT_THAT(v4, IsOk());
  if (v4.ok()) o.devices = v4->devices;
  return o;
}

TEST(PjrtBackendTest, SliceDevicesRunOnThePluginDevicesAtTheirCoordinates) {
  const PjrtBackendOptions o = FakeTpuOptions("tpu");
  ASSERT_EQ(o.devices.size(), 4u);
  auto b = PjrtBackend::Create(o);
  ASSERT_THAT(b, IsOk());
  const auto& plugin = (*b)->plugin_devices();
  ASSERT_EQ(plugin.size(), 4u);
  // Plugin device j is at (1,1,0), (0,0,0), (1,0,0), (0,1,0) for j = 0..3.
  std::vector<int64_t> ids;
  for (size_t i = 0; i < plugin.size(); ++i) {
    const std::vector<int>& c = o.devices[i].coords;
    EXPECT_EQ(plugin[i].coords,
              (std::vector<int64_t>{c[0], c[1], c[2]}))
        << "slice device " << i;
    EXPECT_EQ(plugin[i].core_on_chip, 0);
    ids.push_back(plugin[i].id);
  }
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2, 3, 0}));
}

TEST(PjrtBackendTest, ASliceDeviceWhereThePluginHasNoneIsAnError) {
  EXPECT_THAT(PjrtBackend::Create(FakeTpuOptions("tpuelse")).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("slice device 1 is at (1,0,0) core 0, "
                                       "where the plugin has no device"),
                             HasSubstr("(5,5,0) core 0"))));
}

TEST(PjrtPluginTest, AnotherMajorVersionNamesBothVersions) {
  EXPECT_THAT(PjrtPlugin::Load(FakePlugin("major")).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("incompatible API version: PJRT C API "
                                       "99.1 (plugin) / 0.81 (tpusim's header)"),
                             HasSubstr("install a matching plugin or header"))));
}

TEST(PjrtPluginTest, AFunctionOutsideThePluginsTableIsUnimplemented) {
  EXPECT_THAT(PjrtBackend::Create(FakeOptions("small")).status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr("does not provide PJRT_Client_Create"),
                             HasSubstr("PJRT C API 0.1 (plugin) / 0.81"))));
}

TEST(PjrtPluginTest, AnArgumentStructSizeRejectionNamesBothVersions) {
  EXPECT_THAT(
      PjrtBackend::Create(FakeOptions("argsize")).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("PJRT_Client_Create: Unexpected "
                               "PJRT_Client_Create_Args size"),
                     HasSubstr("(PJRT C API 0.1 (plugin) / 0.81 (tpusim's "
                               "header); install a matching plugin or header)"))));
}

TEST(PjrtPluginTest, APluginReadingOnlyOldStableHloIsRejected) {
  EXPECT_THAT(PjrtBackend::Create(FakeOptions("oldhlo")).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("reads StableHLO up to 0.19.0; tpusim emits "
                                 "StableHLO 1.x: install a newer plugin")));
}

// A TPU plugin on a machine without a TPU fails at once, before loading it
// (libtpu would first wait for a cloud metadata server). The PCI tree is a
// fake one: one device of another vendor.
TEST(PjrtBackendTest, ATpuPluginWithoutATpuFailsFast) {
  const std::string pci = ::testing::TempDir() + "pci";
  std::filesystem::create_directories(pci + "/0000:00:01.0");
  std::ofstream(pci + "/0000:00:01.0/vendor") << "0x8086\n";
  PjrtBackendOptions o = FakeOptions("nodevices");
  o.requires_tpu = true;
  o.pci_devices_dir = pci;
  EXPECT_THAT(PjrtBackend::Create(o).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("is a TPU plugin, but this machine has no TPU "
                                 "(no PCI device of vendor 0x1ae0 under " + pci + ")")));
  // With a Google device it goes on to the plugin (which has no devices).
  std::filesystem::create_directories(pci + "/0000:00:05.0");
  std::ofstream(pci + "/0000:00:05.0/vendor") << "0x1ae0\n";
  EXPECT_THAT(PjrtBackend::Create(o).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("has 0 addressable devices")));
}

TEST(PjrtBackendTest, APluginWithNoDevicesIsAnErrorNotAHang) {
  auto plugin = PjrtPlugin::Load(FakePlugin("nodevices"));
  ASSERT_THAT(plugin, IsOk());
  PjrtBackendOptions o = FakeOptions("nodevices");
  EXPECT_THAT(PjrtBackend::Create(o).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("has 0 addressable devices, the slice has 1")));
  // The client made before the error was destroyed.
  EXPECT_EQ((*plugin)->live_clients, 0);
}

TEST(PjrtPluginTest, TheCpuPluginReportsItsStableHloVersions) {
  auto plugin = PjrtPlugin::Load(DefaultPjrtPluginPath());
  ASSERT_THAT(plugin, IsOk());
  const auto& attrs = (*plugin)->attributes();
  ASSERT_EQ(attrs.count("stablehlo_current_version"), 1u);
  ASSERT_EQ(attrs.count("stablehlo_minimum_version"), 1u);
  EXPECT_EQ(attrs.at("stablehlo_current_version"), "1.13.3");  // xla-cpu-pjrt 0.0.1
}

TEST(PjrtPluginTest, TheCpuPluginLoadsWithTheHeadersMajorVersion) {
  auto plugin = PjrtPlugin::Load(DefaultPjrtPluginPath());
  ASSERT_THAT(plugin, IsOk());
  EXPECT_EQ((*plugin)->major_version(), HeaderApiMajor());
  EXPECT_EQ((*plugin)->minor_version(), 81);  // xla-cpu-pjrt 0.0.1
  // The same object for the same path (loaded once per process).
  EXPECT_EQ(*PjrtPlugin::Load(DefaultPjrtPluginPath()), *plugin);
}

TEST(PjrtBackendTest, DeviceCountMismatchNamesBothCounts) {
  PjrtBackendOptions o;
  o.plugin_path = DefaultPjrtPluginPath();
  o.devices = Devices(2);
  o.cpu_device_count = 4;
  EXPECT_THAT(PjrtBackend::Create(o).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("has 4 addressable devices"),
                             HasSubstr("the slice has 2"))));
}

TEST(PjrtBackendTest, ListsThePluginsDevices) {
  auto b = Make(4);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->devices().size(), 4u);
  ASSERT_EQ(b->plugin_devices().size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(b->plugin_devices()[i].id, i);
    EXPECT_EQ(b->plugin_devices()[i].kind, "cpu");
    EXPECT_EQ(b->devices()[i]->id(), i);
  }
}

TEST(PjrtBackendTest, TransfersRoundTripEveryDtype) {
  auto b = Make(1);
  ASSERT_NE(b, nullptr);
  const std::vector<Tensor> values = {
      Tensor::FromVector<float>(Shape({2, 2}), {1.5f, -2, 3, 4}),
      Tensor::Vector<double>({1.25, -7}),
      Tensor::Vector<BFloat16>({BFloat16::FromFloat(1.5f), BFloat16::FromFloat(-3)}),
      Tensor::Vector<int32_t>({1, -2, 3}),
      Tensor::Vector<int64_t>({int64_t{1} << 40, -5}),
      Tensor::Vector<uint8_t>({0, 255}),
      Tensor::Scalar<float>(42.0f)};
  for (const Tensor& t : values) {
    auto buf = b->TransferToDevice(0, t);
    ASSERT_THAT(buf, IsOk());
    // Bypass the host copy: a variable buffer has none, so this downloads.
    ASSERT_THAT(b->WriteVariable(0, 7, t), IsOk());
    auto back = b->ReadVariable(0, 7);
    ASSERT_THAT(back, IsOk());
    EXPECT_EQ(*back, t) << t.DebugString();
  }
}

TEST(PjrtBackendTest, AbstractAndStringTensorsAreRejected) {
  auto b = Make(1);
  ASSERT_NE(b, nullptr);
  EXPECT_THAT(b->TransferToDevice(0, Tensor::Abstract(DType::kF32, Shape({2}))).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("abstract tensor")));
  EXPECT_THAT(b->TransferToDevice(0, Tensor::Zeros(DType::kBytes, Shape({1}))).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("string tensor")));
  EXPECT_THAT(b->TransferToDevice(3, Tensor::Scalar<float>(1)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("device 3")));
}

// all_reduce(x * x) + replica_id over 2 replicas, exactly HostBackend's.
TEST(PjrtBackendTest, AllReduceMatchesHostBackend) {
  ProgramBuilder pb("sq", 2);
  Value x = *pb.Parameter(DType::kF32, Shape({3}));
  Value y = *pb.Mul(x, x);
  Value s = *pb.AllReduce(y, CollectiveReduce::kSum);
  Value id = *pb.Cast(pb.ReplicaId(), DType::kF32);
  Value out = *pb.Add(s, id);
  Value m = *pb.AllReduce(x, CollectiveReduce::kMean);
  Program p = *std::move(pb).Build({out, m});
  const std::vector<std::vector<Tensor>> args = {
      {Tensor::Vector<float>({1, 2, 3})}, {Tensor::Vector<float>({4, 5, 6})}};
  auto b = Make(2);
  ASSERT_NE(b, nullptr);
  auto got = RunProgram(*b, p, args);
  HostBackend host(2);
  auto want = RunProgram(host, p, args);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_THAT(got[0][0].values<float>(), ElementsAre(17, 29, 45));
  EXPECT_THAT(got[1][0].values<float>(), ElementsAre(18, 30, 46));
  EXPECT_THAT(got[0][1].values<float>(), ElementsAre(2.5, 3.5, 4.5));
  EXPECT_EQ(got, want);
}

// Variables are parameters and results: assign_add twice accumulates.
TEST(PjrtBackendTest, VariablesPersistAcrossExecutions) {
  ProgramBuilder pb("acc", 2);
  ASSERT_THAT(pb.DeclareVariable(0, DType::kF32, Shape({2}), "total"), IsOk());
  Value x = *pb.Parameter(DType::kF32, Shape({2}));
  Value sum = *pb.AllReduce(x, CollectiveReduce::kSum);
  Value after = *pb.VariableAssignAdd(0, sum);
  Program p = *std::move(pb).Build({after});
  auto b = Make(2);
  ASSERT_NE(b, nullptr);
  for (int d = 0; d < 2; ++d)
    ASSERT_THAT(b->WriteVariable(d, 0, Tensor::Vector<float>({100, 200})), IsOk());
  const std::vector<std::vector<Tensor>> args = {
      {Tensor::Vector<float>({1, 2})}, {Tensor::Vector<float>({3, 4})}};
  RunProgram(*b, p, args);
  auto second = RunProgram(*b, p, args);
  EXPECT_THAT(second[1][0].values<float>(), ElementsAre(108, 212));
  for (int d = 0; d < 2; ++d) {
    EXPECT_THAT(b->ReadVariable(d, 0)->template values<float>(), ElementsAre(108, 212));
  }
  auto profile = b->CollectProfile();
  ASSERT_THAT(profile, IsOk());
  EXPECT_EQ(profile->devices(0).executions(), 2);
  EXPECT_EQ(profile->steps_size(), 2);
  EXPECT_GT(profile->steps(0).end_ps(), profile->steps(0).start_ps());
}

TEST(PjrtBackendTest, MoreReplicasThanDevicesIsAnError) {
  ProgramBuilder pb("wide", 4);
  Value x = *pb.Parameter(DType::kF32, Shape({2}));
  Program p = *std::move(pb).Build({x});
  auto b = Make(2);
  ASSERT_NE(b, nullptr);
  EXPECT_THAT(b->Compile(p, {4, 1}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("4 replicas x 1 cores need 4 devices, the pjrt "
                                 "backend has 2")));
}

TEST(PjrtBackendTest, ReadingAnUnsetVariableIsFailedPrecondition) {
  ProgramBuilder pb("read", 1);
  ASSERT_THAT(pb.DeclareVariable(3, DType::kF32, Shape({2}), "w"), IsOk());
  Value w = *pb.VariableRead(3);
  Program p = *std::move(pb).Build({w});
  auto b = Make(1);
  ASSERT_NE(b, nullptr);
  auto exe = b->Compile(p, {1, 1});
  ASSERT_THAT(exe, IsOk());
  std::vector<std::vector<Buffer*>> args(1);
  EXPECT_THAT(b->ExecuteSpmd(**exe, SpmdAssignment{{{0}}}, args).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("variable slot 3 (w) that was never written on device 0")));
}

// f32[<=4,2]: replica 0 has 3 rows, replica 1 one row; the mean over rows
// and the dot contracting the rows see only the true rows.
TEST(PjrtBackendTest, DynamicRowsArePaddedAndMasked) {
  ProgramBuilder pb("dyn", 2);
  Value x = *pb.Parameter(DType::kF32, Shape({4, 2}), 0b1);
  Value e = *pb.Exp(x);  // exp(0) = 1 in the padding: must not leak
  Value mean = *pb.ReduceMean(e, {0});
  Value gram = *pb.DotGeneral(e, e, DotDims{{}, {}, {0}, {0}});
  Value rows = *pb.Mul(x, x);
  Program p = *std::move(pb).Build({mean, gram, rows});
  const std::vector<std::vector<Tensor>> args = {
      {Tensor::FromVector<float>(Shape({3, 2}), {0, 1, 2, 3, 4, 5})},
      {Tensor::FromVector<float>(Shape({1, 2}), {-1, 1})}};
  auto b = Make(2);
  ASSERT_NE(b, nullptr);
  auto got = RunProgram(*b, p, args);
  HostBackend host(2);
  auto want = RunProgram(host, p, args);
  ASSERT_EQ(got.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(got[r].size(), 3u);
    for (int o = 0; o < 3; ++o) {
      ASSERT_EQ(got[r][o].shape(), want[r][o].shape()) << r << " " << o;
      for (int64_t i = 0; i < want[r][o].num_elements(); ++i) {
        const double w = want[r][o].AsDouble(i);
        EXPECT_LE(std::fabs(got[r][o].AsDouble(i) - w), 1e-6 * std::max(1.0, std::fabs(w)))
            << "replica " << r << " output " << o << " element " << i;
      }
    }
  }
  EXPECT_EQ(got[1][2].shape(), Shape({1, 2}));
}

// The golden programs compile on the plugin and give HostBackend's values:
// exact for integer and data-movement outputs, within 1e-6 relative for f32.
TEST(PjrtBackendTest, GoldenProgramsRunAndMatchHostBackend) {
  Program p = testing::Movement();
  const std::vector<std::vector<Tensor>> args = {
      {Tensor::FromVector<float>(Shape({4, 2}), {1, 2, 3, 4, 5, 6, 7, 8}),
       Tensor::Vector<int32_t>({3, 0, 3})},
      {Tensor::FromVector<float>(Shape({4, 2}), {-1, 0.5, 2, -3, 0, 1, 9, 4}),
       Tensor::Vector<int32_t>({1, 2, 1})}};
  auto b = Make(2);
  ASSERT_NE(b, nullptr);
  auto got = RunProgram(*b, p, args);
  HostBackend host(2);
  auto want = RunProgram(host, p, args);
  ASSERT_EQ(got.size(), want.size());
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(got[r].size(), want[r].size());
    EXPECT_EQ(got[r][0], want[r][0]) << "one_hot, replica " << r;
    EXPECT_EQ(got[r][3], want[r][3]) << "replica_id, replica " << r;
    for (int o : {1, 2}) {
      ASSERT_EQ(got[r][o].shape(), want[r][o].shape());
      for (int64_t i = 0; i < want[r][o].num_elements(); ++i) {
        const double w = want[r][o].AsDouble(i);
        EXPECT_LE(std::fabs(got[r][o].AsDouble(i) - w),
                  1e-6 * std::max(1.0, std::fabs(w)))
            << "replica " << r << " output " << o << " element " << i;
      }
    }
  }
  // The MLP step, with a partial batch on replica 1, updates w and b as the
  // host does.
  Program mlp = testing::MlpStep();
  HostBackend host2(2);
  auto b2 = Make(2);
  ASSERT_NE(b2, nullptr);
  for (Backend* be : {static_cast<Backend*>(&host2), static_cast<Backend*>(b2.get())}) {
    for (int d = 0; d < 2; ++d) {
      ASSERT_THAT(be->WriteVariable(d, 0, Tensor::FromVector<float>(Shape({3, 2}), {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f})), IsOk());
      ASSERT_THAT(be->WriteVariable(d, 1, Tensor::Vector<float>({0.05f, -0.05f})), IsOk());
    }
  }
  const std::vector<std::vector<Tensor>> mlp_args = {
      {Tensor::FromVector<float>(Shape({4, 3}), {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 0, 1}),
       Tensor::FromVector<float>(Shape({4, 2}), {1, 0, 0, 1, 1, 1, 0, 0})},
      {Tensor::FromVector<float>(Shape({2, 3}), {-1, 0, 1, 2, 2, 2}),
       Tensor::FromVector<float>(Shape({2, 2}), {0.5, 0.5, -1, 1})}};
  auto mlp_got = RunProgram(*b2, mlp, mlp_args);
  auto mlp_want = RunProgram(host2, mlp, mlp_args);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NEAR(mlp_got[r][0].AsDouble(0), mlp_want[r][0].AsDouble(0), 1e-6) << r;
    for (int slot : {0, 1}) {
      Tensor g = *b2->ReadVariable(r, slot);
      Tensor w = *host2.ReadVariable(r, slot);
      for (int64_t i = 0; i < w.num_elements(); ++i)
        EXPECT_NEAR(g.AsDouble(i), w.AsDouble(i), 1e-6) << "slot " << slot;
    }
  }
}

TEST(PjrtBackendTest, ACompileErrorCarriesThePluginsMessageAndTheEmittedLine) {
  auto b = Make(1);
  ASSERT_NE(b, nullptr);
  const std::string text =
      "module @bad {\n"
      "  func.func public @main(%v0: tensor<2xf32>) -> (tensor<2xf32>) {\n"
      "    %v1 = \"stablehlo.no_such_op\"(%v0) : (tensor<2xf32>) -> tensor<2xf32>\n"
      "    \"func.return\"(%v1) : (tensor<2xf32>) -> ()\n"
      "  }\n"
      "}\n";
  absl::Status s = b->CheckStableHlo(text, 1);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("pjrt: compiling program (text): "),
                    HasSubstr("stablehlo.no_such_op"),
                    HasSubstr("; emitted line 3: %v1 = \"stablehlo.no_such_op\"")));
  EXPECT_EQ(b->live_objects(), 1);  // only the client
}

// What the plugin's verifier rejects (replica groups that leave out replica 1)
// comes back with the plugin's own code (XLA's CPU plugin says UNKNOWN for
// compile errors) and message.
TEST(PjrtBackendTest, ThePluginsCodeAndMessageComeThrough) {
  auto b = Make(2);
  ASSERT_NE(b, nullptr);
  const std::string text =
      "module @groups attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {\n"
      "  func.func public @main(%v0: tensor<2xf32>) -> (tensor<2xf32>) {\n"
      "    %v1 = \"stablehlo.all_reduce\"(%v0) ({\n"
      "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
      "      %c = \"stablehlo.add\"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "      \"stablehlo.return\"(%c) : (tensor<f32>) -> ()\n"
      "    }) {replica_groups = dense<[[0, 7]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>\n"
      "    \"func.return\"(%v1) : (tensor<2xf32>) -> ()\n"
      "  }\n"
      "}\n";
  EXPECT_THAT(b->CheckStableHlo(text, 2),
              StatusIs(absl::StatusCode::kUnknown,
                       AllOf(HasSubstr("pjrt: compiling program (text): "),
                             HasSubstr("replica id #1 not seen in replica groups"),
                             HasSubstr("; emitted line 3: %v1 = \"stablehlo.all_reduce\""))));
}

// Model parallelism: 2 replicas x 2 cores on 4 devices (replica r on devices
// {3 - 2r, 2 - 2r}), exactly HostBackend's values, the variable on core 1's
// devices only.
TEST(PjrtBackendTest, TwoCoresPerReplicaMatchHostBackend) {
  Program p = testing::TwoCores();
  const SpmdAssignment assignment{{{3, 2}, {1, 0}}};
  const std::vector<std::vector<float>> xs = {{1, 2}, {3, 4}};
  std::vector<std::vector<std::vector<float>>> results;
  auto b = Make(4);
  ASSERT_NE(b, nullptr);
  HostBackend host(4);
  for (Backend* be : {static_cast<Backend*>(&host), static_cast<Backend*>(b.get())}) {
    ASSERT_THAT(be->WriteVariable(2, 0, Tensor::Vector<float>({10, 20})), IsOk());
    ASSERT_THAT(be->WriteVariable(0, 0, Tensor::Vector<float>({30, 40})), IsOk());
    auto exe = be->Compile(p, {2, 2});
    ASSERT_THAT(exe, IsOk());
    std::vector<std::unique_ptr<Buffer>> owned;
    std::vector<std::vector<Buffer*>> args(2);
    for (int r = 0; r < 2; ++r) {
      auto buf = be->TransferToDevice(assignment.replica_devices[r][0],
                                      Tensor::Vector<float>(xs[r]));
      ASSERT_THAT(buf, IsOk());
      args[r].push_back(buf->get());
      owned.push_back(std::move(*buf));
    }
    for (int step = 0; step < 2; ++step) {
      auto outs = be->ExecuteSpmd(**exe, assignment, args);
      ASSERT_THAT(outs, IsOk());
      auto& res = results.emplace_back();
      for (int r = 0; r < 2; ++r) {
        EXPECT_EQ((*outs)[r][0]->device().id(), assignment.replica_devices[r][0]);
        EXPECT_EQ((*outs)[r][1]->device().id(), assignment.replica_devices[r][1]);
        for (auto& o : (*outs)[r]) {
          Tensor t = *be->TransferFromDevice(*o);
          res.emplace_back(t.values<float>().begin(), t.values<float>().end());
        }
      }
    }
    EXPECT_THAT(be->ReadVariable(2, 0)->values<float>(), ElementsAre(40, 180));  // w *= 1 + x, twice, x = (1, 2)

    EXPECT_THAT(be->ReadVariable(0, 0)->values<float>(), ElementsAre(480, 1000));  // x = (3, 4)
    EXPECT_THAT(be->ReadVariable(3, 0).status(),
                StatusIs(absl::StatusCode::kNotFound, HasSubstr("never written on device 3")));
  }
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[2], results[0]);
  EXPECT_EQ(results[3], results[1]);
  // Step 1, replica 0: y = x * w = [10, 40]; sum over replicas with
  // [90, 160] = [100, 200]; + replica id 0.
  EXPECT_THAT(results[2][0], ElementsAre(100, 200));
  EXPECT_THAT(results[2][3], ElementsAre(101, 201));
}

// conv2d, max_pool2d and their gradients on the plugin equal the host kernels
// within 1e-5 relative (the max-pool routing exactly: distinct inputs).
TEST(PjrtBackendTest, ConvolutionsAndPoolingMatchHostBackend) {
  Program p = testing::Windowed();
  std::vector<float> xs(2 * 5 * 5 * 3), fs(3 * 3 * 3 * 4);
  // Half the inputs are 0 (as after a relu): max-pool windows with ties.
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = std::max(0.0, std::sin(0.7 * i + 0.1));
  for (size_t i = 0; i < fs.size(); ++i) fs[i] = std::cos(1.3 * i);
  const std::vector<std::vector<Tensor>> args = {
      {Tensor::FromVector<float>(Shape({2, 5, 5, 3}), xs),
       Tensor::FromVector<float>(Shape({3, 3, 3, 4}), fs)}};
  auto b = Make(1);
  ASSERT_NE(b, nullptr);
  auto got = RunProgram(*b, p, args);
  HostBackend host(1);
  auto want = RunProgram(host, p, args);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].size(), want[0].size());
  for (size_t o = 0; o < want[0].size(); ++o) {
    ASSERT_EQ(got[0][o].shape(), want[0][o].shape()) << "output " << o;
    for (int64_t i = 0; i < want[0][o].num_elements(); ++i) {
      const double w = want[0][o].AsDouble(i);
      EXPECT_LE(std::fabs(got[0][o].AsDouble(i) - w), 1e-5 * std::max(1.0, std::fabs(w)))
          << "output " << o << " element " << i << ": " << got[0][o].AsDouble(i)
          << " vs host " << w;
    }
  }
}

TEST(PjrtBackendTest, EveryPluginObjectIsDestroyed) {
  auto plugin = PjrtPlugin::Load(DefaultPjrtPluginPath());
  ASSERT_THAT(plugin, IsOk());
  {
    ProgramBuilder pb("acc", 2);
    ASSERT_THAT(pb.DeclareVariable(0, DType::kF32, Shape({2}), "total"), IsOk());
    Value x = *pb.Parameter(DType::kF32, Shape({2}));
    Value after = *pb.VariableAssignAdd(0, *pb.AllReduce(x, CollectiveReduce::kSum));
    Program p = *std::move(pb).Build({after});
    auto b = Make(2);
    ASSERT_NE(b, nullptr);
    EXPECT_GT(b->live_objects(), 0);  // the client
    for (int d = 0; d < 2; ++d)
      ASSERT_THAT(b->WriteVariable(d, 0, Tensor::Vector<float>({0, 0})), IsOk());
    RunProgram(*b, p, {{Tensor::Vector<float>({1, 2})}, {Tensor::Vector<float>({3, 4})}});
    // A failing execute (wrong argument count) frees what it made too.
    auto exe = b->Compile(p, {2, 1});
    ASSERT_THAT(exe, IsOk());
    std::vector<std::vector<Buffer*>> none(2);
    EXPECT_FALSE(b->ExecuteSpmd(**exe, SpmdAssignment{{{0}, {1}}}, none).ok());
  }
  EXPECT_EQ((*plugin)->live_clients, 0);
  EXPECT_EQ((*plugin)->live_buffers, 0);
  EXPECT_EQ((*plugin)->live_executables, 0);
  EXPECT_EQ((*plugin)->live_events, 0);
}

}  // namespace
}  // namespace tpusim::runtime::pjrt
