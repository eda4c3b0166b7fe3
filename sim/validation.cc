#include "sim/validation.h"

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "sim/kernel.h"
#include "sim/net/collective_runner.h"
#include "sim/net/network.h"
#include "sim/net_preset.h"
#include "sim/sim_backend.h"
#include "strategy/device_assignment.h"
#include "strategy/topology.h"

namespace tpusim::sim {
namespace {

// Steady state (issue 18): the first device call is the warm-up (as `run`
// defines it); the median of the next three is the step.
constexpr int kWarmUpCalls = 1;
constexpr int kSteadySteps = 3;

using runtime::DType;
using runtime::Program;
using runtime::ProgramBuilder;
using runtime::Shape;
using runtime::Tensor;
using runtime::Value;

// Compiles `p` and runs it `calls` times on `sim` with abstract arguments;
// returns the profile (one step per call).
absl::StatusOr<runtime::Profile> RunAbstract(
    SimBackend& sim, const Program& p,
    const runtime::SpmdAssignment& assignment, int calls = 1) {
  TPUSIM_ASSIGN_OR_RETURN(
      auto exe, sim.Compile(p, {p.num_replicas(), p.num_cores_per_replica()}));
  std::vector<std::unique_ptr<runtime::Buffer>> owned;
  std::vector<std::vector<runtime::Buffer*>> args(p.num_replicas());
  for (int r = 0; r < p.num_replicas(); ++r) {
    for (Value v : p.parameters()) {
      const runtime::Op& op = p.op(v);
      TPUSIM_ASSIGN_OR_RETURN(
          auto b, sim.TransferToDevice(
                      assignment.replica_devices[r][op.logical_core],
                      Tensor::Abstract(op.type.dtype, op.type.shape)));
      args[r].push_back(b.get());
      owned.push_back(std::move(b));
    }
  }
  for (int c = 0; c < calls; ++c) {
    TPUSIM_RETURN_IF_ERROR(sim.ExecuteSpmd(*exe, assignment, args).status());
  }
  return sim.CollectProfile();
}

// A network of `slice` (one per process) with its session.
struct Net {
  std::unique_ptr<KernelSession> session;
  std::unique_ptr<net::Network> network;
  std::unique_ptr<net::Topology> topology;
};

absl::StatusOr<Net> MakeNet(absl::string_view slice) {
  TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                          runtime::ParseSlice(slice));
  TPUSIM_ASSIGN_OR_RETURN(net::Topology t,
                          net::Topology::Create(layout, net::WrapMode::kGeneration));
  TPUSIM_ASSIGN_OR_RETURN(const ChipPreset* preset,
                          FindChipPreset(layout.generation->name));
  TPUSIM_ASSIGN_OR_RETURN(net::NetConfig config, NetConfigFromPreset(*preset));
  Net n;
  n.topology = std::make_unique<net::Topology>(std::move(t));
  Net* np = &n;
  TPUSIM_ASSIGN_OR_RETURN(
      n.session, KernelSession::Create([np, &config]() -> absl::Status {
        TPUSIM_ASSIGN_OR_RETURN(np->network,
                                net::Network::Create(*np->topology, config));
        return absl::OkStatus();
      }));
  return n;
}

absl::StatusOr<double> TimeOne(Net& n, net::CollectiveOp op, int64_t bytes,
                               std::vector<std::vector<int>> groups) {
  TPUSIM_ASSIGN_OR_RETURN(auto partition,
                          net::GroupPartition::Create(*n.topology, groups));
  net::CollectiveRequest r;
  r.op = op;
  r.bytes = bytes;
  r.algorithm = net::Algorithm::kAuto;
  r.groups = partition;
  TPUSIM_ASSIGN_OR_RETURN(
      std::vector<net::JobResult> res,
      net::RunCollectives(*n.session, *n.network,
                          {{r, net::AllDevices(*n.topology)}}));
  return (res[0].end - res[0].start).seconds();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Sheet C.4's step model, independent of the simulator's schedule and
// network: every op at its C.1 roofline max(FLOPs / peak, HBM bytes / HBM
// peak) one after another in program order on the device, except that an op
// using an all-reduce's result runs after all the ops that do not (the
// weight updates go last, as XLA schedules them); each all-reduce runs on
// the network from when its operand is ready (and the previous one is done)
// for C.3's time: 2V / (k·W_bidi) over the k chip axes the group spans (x2
// when they have no wraparound, C.3 "missing wraparound roughly doubles"),
// plus T_hop·Σ|X_i| (the hop latency of a reduce-scatter and an all-gather,
// C.3 "Multi-axis"). W_uni is the preset's achieved link rate, T_hop its hop
// latency. The exchange between the two cores of a v2/v3 chip is not
// counted (C.3 covers the chip torus only).
void C4Model(const Program& p, const ChipPreset& preset,
             const net::Topology& topology, const DeviceRates& rates,
             C4Result& r) {
  const double hbm = preset.hbm_gbps * 1e9 / preset.generation->devices_per_chip;
  const double vpu =
      static_cast<double>(rates.vector_elements_per_cycle) * rates.clock_hz;
  const double w_bidi = 2 * *preset.ici_link_achieved_gbps * 1e9;
  int k = 0, hops = 0;
  bool wraps = true;
  for (int a = 0; a < 3; ++a) {
    if (topology.dims()[a] <= 1) continue;
    ++k;
    hops += topology.dims()[a];
    wraps = wraps && topology.wraps(a);
  }
  const size_t num_ops = p.ops().size();
  std::vector<bool> after_collective(num_ops, false);
  std::vector<double> ready(num_ops, 0);
  auto roofline = [&](size_t i) {
    const runtime::OpCost c = p.CostOf(Value{static_cast<int>(i)});
    const double compute = p.ops()[i].code == runtime::OpCode::kDot
                               ? c.flops / rates.peak_flops_per_second
                               : c.flops / vpu;
    return std::max(compute, (c.bytes_read + c.bytes_written) / hbm);
  };
  double t = 0, network = 0, all_reduce = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < num_ops; ++i) {
      const runtime::Op& op = p.ops()[i];
      if (pass == 0) {
        for (int o : op.operands) {
          if (after_collective[o] || runtime::IsCollective(p.ops()[o].code)) {
            after_collective[i] = true;
          }
        }
      }
      if (after_collective[i] != (pass == 1)) continue;
      if (op.code == runtime::OpCode::kParameter) continue;
      double start = t;
      for (int o : op.operands) start = std::max(start, ready[o]);
      if (runtime::IsCollective(op.code)) {
        const runtime::OpCost c = p.CostOf(Value{op.operands[0]});
        const double v = static_cast<double>(c.bytes_written);
        const double ar = 2 * v / (std::max(1, k) * w_bidi) * (wraps ? 1 : 2) +
                          hops * preset.ici_hop_latency.seconds();
        all_reduce += ar;
        network = std::max(network, start) + ar;
        ready[i] = network;
        continue;
      }
      t = start + roofline(i);
      ready[i] = t;
    }
  }
  r.model = std::max(t, network);
  r.model_all_reduce = all_reduce;
}

}  // namespace

absl::StatusOr<double> B6FfwMatmulSeconds() {
  TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<SimBackend> sim,
                          SimBackend::Create("v2-8"));
  TPUSIM_ASSIGN_OR_RETURN(strategy::Topology topology,
                          strategy::Topology::FromDevices(
                              sim->layout().mesh_shape, sim->layout().devices));
  // Computation shape 2x1x1: each model-parallel pair on neighbouring chips.
  TPUSIM_ASSIGN_OR_RETURN(
      strategy::DeviceAssignment da,
      strategy::DeviceAssignment::Build(topology, {2, 1, 1}, {}, 4));
  TPUSIM_ASSIGN_OR_RETURN(std::vector<std::vector<int>> ids,
                          da.ReplicaDeviceIds(sim->layout().devices));
  ProgramBuilder b("ffw", 4, 2);
  runtime::DotDims dims;
  dims.lhs_contracting = {2};
  dims.rhs_contracting = {0};
  std::vector<Value> outs;
  for (int core = 0; core < 2; ++core) {
    TPUSIM_RETURN_IF_ERROR(b.set_logical_core(core));
    TPUSIM_ASSIGN_OR_RETURN(Value x,
                            b.Parameter(DType::kBF16, Shape({8, 1024, 8192})));
    TPUSIM_ASSIGN_OR_RETURN(Value w,
                            b.Parameter(DType::kBF16, Shape({8192, 16384})));
    TPUSIM_ASSIGN_OR_RETURN(Value y, b.DotGeneral(x, w, dims));
    outs.push_back(y);
  }
  TPUSIM_ASSIGN_OR_RETURN(Program p, std::move(b).Build(outs));
  TPUSIM_ASSIGN_OR_RETURN(runtime::Profile profile,
                          RunAbstract(*sim, p, {ids}));
  double seconds = 0;
  for (const runtime::TimelineSpan& span : profile.spans()) {
    if (span.name().rfind("dot.", 0) == 0) {
      seconds = std::max(seconds, (span.end_ps() - span.start_ps()) * 1e-12);
    }
  }
  return seconds;
}

absl::StatusOr<double> B6ReduceScatterSeconds() {
  TPUSIM_ASSIGN_OR_RETURN(Net n, MakeNet("v2-8"));
  const net::Topology& t = *n.topology;
  const int a = t.device_at(t.chip_at({0, 0, 0}), 0);
  const int b = t.device_at(t.chip_at({1, 0, 0}), 0);
  std::vector<std::vector<int>> groups = {{a, b}};
  for (int d = 0; d < t.num_devices(); ++d) {
    if (d != a && d != b) groups.push_back({d});
  }
  return TimeOne(n, net::CollectiveOp::kReduceScatter, 134217728, groups);
}

absl::StatusOr<double> B5AllGatherSeconds(int64_t bytes) {
  TPUSIM_ASSIGN_OR_RETURN(Net n, MakeNet("v5litepod-32"));  // 8x4, no wrap
  const net::Topology& t = *n.topology;
  std::vector<std::vector<int>> groups;  // lines along y
  for (int x = 0; x < t.dims()[0]; ++x) {
    std::vector<int> g;
    for (int y = 0; y < t.dims()[1]; ++y) {
      g.push_back(t.device_at(t.chip_at({x, y, 0}), 0));
    }
    groups.push_back(std::move(g));
  }
  return TimeOne(n, net::CollectiveOp::kAllGather, bytes, groups);
}

absl::StatusOr<C4Result> C4DataParallelStep(
    absl::string_view slice, const ExternalCompiler* compiler) {
  TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<SimBackend> sim,
                          SimBackend::Create(slice));
  if (compiler != nullptr) sim->SetCompiler(*compiler, "xla-tpu");
  const int n = sim->layout().num_devices();
  constexpr int kLayers = 6, kBatch = 1024, kWidth = 2048;
  ProgramBuilder b("mlp_step", n);
  TPUSIM_ASSIGN_OR_RETURN(Value x,
                          b.Parameter(DType::kBF16, Shape({kBatch, kWidth})));
  std::vector<Value> w, h = {x};
  for (int l = 0; l < kLayers; ++l) {
    TPUSIM_ASSIGN_OR_RETURN(Value wl,
                            b.Parameter(DType::kBF16, Shape({kWidth, kWidth})));
    w.push_back(wl);
  }
  for (int l = 0; l < kLayers; ++l) {
    TPUSIM_ASSIGN_OR_RETURN(Value z, b.MatMul(h[l], w[l]));
    TPUSIM_ASSIGN_OR_RETURN(Value a, b.Relu(z));
    h.push_back(a);
  }
  Value g = h.back();
  std::vector<Value> updated;
  for (int l = kLayers - 1; l >= 0; --l) {
    TPUSIM_ASSIGN_OR_RETURN(Value dw, b.MatMul(h[l], g, /*transpose_a=*/true));
    TPUSIM_ASSIGN_OR_RETURN(Value sum,
                            b.AllReduce(dw, runtime::CollectiveReduce::kSum));
    TPUSIM_ASSIGN_OR_RETURN(Value u, b.Sub(w[l], sum));
    updated.push_back(u);
    if (l > 0) {
      TPUSIM_ASSIGN_OR_RETURN(g, b.MatMul(g, w[l], false, /*transpose_b=*/true));
    }
  }
  TPUSIM_ASSIGN_OR_RETURN(Program p, std::move(b).Build(updated));
  std::vector<std::vector<int>> assignment;
  for (int r = 0; r < n; ++r) assignment.push_back({r});
  TPUSIM_ASSIGN_OR_RETURN(runtime::Profile profile,
                          RunAbstract(*sim, p, {assignment}, kWarmUpCalls + kSteadySteps));
  if (profile.steps_size() != kWarmUpCalls + kSteadySteps) {
    return absl::InternalError("C.4: expected one step per device call");
  }
  // Steady state: the median device time (without the host loop) of the
  // calls after the warm-up.
  std::vector<double> device;
  for (int c = kWarmUpCalls; c < profile.steps_size(); ++c) {
    const runtime::StepProfile& st = profile.steps(c);
    device.push_back((st.end_ps() - st.start_ps() - st.host_overhead_ps()) *
                     1e-12);
  }
  const runtime::StepProfile& last = profile.steps(profile.steps_size() - 1);
  C4Result r;
  r.simulated = Median(device);
  r.exposed_collective = last.exposed_collective_ps() * 1e-12;
  r.hidden_collective = last.hidden_collective_ps() * 1e-12;
  TPUSIM_ASSIGN_OR_RETURN(const ChipPreset* preset,
                          FindChipPreset(sim->layout().generation->name));
  TPUSIM_ASSIGN_OR_RETURN(
      net::Topology topology,
      net::Topology::Create(sim->layout(), net::WrapMode::kGeneration));
  C4Model(p, *preset, topology, sim->rates(), r);
  return r;
}

}  // namespace tpusim::sim
