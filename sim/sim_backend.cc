#include "sim/sim_backend.h"

#include <algorithm>
#include <array>
#include <map>
#include <cmath>
#include <limits>
#include <queue>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/check.h"
#include "common/int_math.h"
#include "common/status_macros.h"
#include "sim/kernel.h"
#include "sim/compile/compile.h"
#include "sim/net/collective.h"
#include "sim/net/network.h"
#include "sim/net_preset.h"
#include "sim/pod.pb.h"

namespace tpusim::sim {

using common::Picoseconds;
using runtime::OpCode;

// The SystemC side: the kernel session and the ICI network, plus the queue of
// collective starts that the step walk hands to it in time order.
class SimPod {
 public:
  static absl::StatusOr<std::unique_ptr<SimPod>> Create(
      const runtime::SliceLayout& layout, const ChipPreset& preset,
      net::WrapMode wrap, int threads) {
    TPUSIM_ASSIGN_OR_RETURN(net::Topology topology,
                            net::Topology::Create(layout, wrap));
    TPUSIM_ASSIGN_OR_RETURN(net::NetConfig config, NetConfigFromPreset(preset));
    std::unique_ptr<SimPod> pod(new SimPod(std::move(topology), config));
    SimPod* p = pod.get();
    TPUSIM_ASSIGN_OR_RETURN(
        p->session_, KernelSession::Create([p, threads]() -> absl::Status {
          net::NetworkOptions options;
          options.name = "pod_ici";
          options.threads = threads;
          TPUSIM_ASSIGN_OR_RETURN(
              p->network_,
              net::Network::Create(p->topology_, p->config_, options));
          return absl::OkStatus();
        }));
    // Initialise the processes at time 0.
    TPUSIM_RETURN_IF_ERROR(p->session_->RunFor(Picoseconds(0)).status());
    return pod;
  }

  const net::Topology& topology() const { return topology_; }
  const net::NetConfig& config() const { return config_; }
  net::Network& network() { return *network_; }
  Picoseconds Now() const { return session_->Now(); }

  // A collective of one call: every member device's start time, filled in as
  // the walk reaches it, and its end, filled in by the network.
  struct Collective {
    net::CollectiveRequest request;
    std::vector<Picoseconds> start;  // by member index
    std::vector<Picoseconds> end;
    std::vector<int> devices;        // by member index
    int remaining = 0;
    bool trivial = false;  // groups of one: no traffic, ends at its start
  };

  int AddCollective(Collective c) {
    c.remaining = static_cast<int>(c.devices.size());
    c.end.assign(c.devices.size(), Picoseconds(-1));
    c.start.assign(c.devices.size(), Picoseconds(-1));
    collectives_.push_back(std::move(c));
    return static_cast<int>(collectives_.size()) - 1;
  }
  Collective& collective(int id) { return collectives_[id]; }

  // Member `member` of collective `id` starts at `at`.
  void Schedule(int id, int member, Picoseconds at) {
    Collective& c = collectives_[id];
    c.start[member] = at;
    if (c.trivial) {
      c.end[member] = at;
      --c.remaining;
      return;
    }
    queue_.push(Pending{at.count(), id, c.devices[member], member});
  }

  // Runs the network until every member of collective `id` has ended.
  absl::Status Resolve(int id) {
    Collective& c = collectives_[id];
    awaited_ = id;
    while (c.remaining > 0) {
      if (!queue_.empty()) {
        const int64_t next = queue_.top().time;
        if (next > Now().count()) {
          TPUSIM_RETURN_IF_ERROR(
              session_->RunFor(Picoseconds(next - Now().count())).status());
          if (c.remaining == 0) break;
        }
        TPUSIM_RETURN_IF_ERROR(StartDue());
        continue;
      }
      TPUSIM_RETURN_IF_ERROR(session_->RunUntilIdle().status());
      if (c.remaining > 0 && queue_.empty()) {
        awaited_ = -1;
        return absl::InternalError(absl::StrCat(
            "collective ", id, ": ", c.remaining,
            " member(s) never finished (a group member did not start)"));
      }
    }
    awaited_ = -1;
    return absl::OkStatus();
  }

  // Starts that the walk placed before the network's current time (possible
  // only when a device that is behind reaches a collective after the network
  // was run for another one); they start now. SimStats::late_starts; the
  // data-parallel and model-parallel tests assert zero.
  int64_t late_starts() const { return late_starts_; }

  void ClearCollectives() {
    collectives_.clear();
    TPUSIM_CHECK(queue_.empty());
  }

 private:
  struct Pending {
    int64_t time;
    int id;
    int device;
    int member;
    // Earliest first; at equal times by collective (program order), then
    // device: a fixed key, never insertion order.
    bool operator<(const Pending& o) const {
      return std::tie(time, id, device) > std::tie(o.time, o.id, o.device);
    }
  };

  SimPod(net::Topology topology, net::NetConfig config)
      : topology_(std::move(topology)), config_(config) {}

  absl::Status StartDue() {
    while (!queue_.empty() && queue_.top().time <= Now().count()) {
      const Pending p = queue_.top();
      queue_.pop();
      if (p.time < Now().count()) ++late_starts_;
      Collective& c = collectives_[p.id];
      const int id = p.id;
      const int member = p.member;
      TPUSIM_RETURN_IF_ERROR(network_->endpoint(p.device).Start(
          c.request, [this, id, member](const net::CollectiveResult& r) {
            Collective& done = collectives_[id];
            done.end[member] = r.end;
            if (--done.remaining == 0 && awaited_ == id) session_->Pause();
          }));
    }
    return absl::OkStatus();
  }

  net::Topology topology_;
  net::NetConfig config_;
  std::unique_ptr<KernelSession> session_;
  std::unique_ptr<net::Network> network_;
  std::vector<Collective> collectives_;
  std::priority_queue<Pending> queue_;
  int awaited_ = -1;
  int64_t late_starts_ = 0;
};

// What the timing walk needs of an executable; shared with the calls that
// wait to be timed, so the executable may go before they are.
struct SimSchedule {
  std::unique_ptr<runtime::Executable> host;
  CompiledProgram compiled;
  // Per kernel: the parameter indices it reads.
  std::vector<std::vector<int>> kernel_parameters;

  const runtime::Program& program() const { return host->program(); }
};

class SimExecutable final : public runtime::Executable {
 public:
  SimExecutable(std::unique_ptr<runtime::Executable> host, CompiledProgram c) {
    auto s = std::make_shared<SimSchedule>();
    s->host = std::move(host);
    s->compiled = std::move(c);
    // The parameters each kernel reads (through reshapes): its infeed.
    const std::vector<runtime::Op>& ops = s->program().ops();
    auto root_parameter = [&](int v) {
      while (ops[v].code == OpCode::kReshape) v = ops[v].operands[0];
      return ops[v].code == OpCode::kParameter ? v : -1;
    };
    s->kernel_parameters.resize(s->compiled.kernels.size());
    for (size_t k = 0; k < s->compiled.kernels.size(); ++k) {
      for (int op : s->compiled.kernels[k].op_ids) {
        for (int o : ops[op].operands) {
          const int p = root_parameter(o);
          if (p >= 0) {
            s->kernel_parameters[k].push_back(
                static_cast<int>(ops[p].attrs.parameter_index));
          }
        }
      }
    }
    schedule_ = std::move(s);
  }
  const runtime::Program& program() const override {
    return schedule_->program();
  }
  const runtime::CompileOptions& options() const override {
    return schedule_->host->options();
  }
  runtime::OpCost cost() const override { return schedule_->host->cost(); }
  const runtime::Executable& host() const { return *schedule_->host; }
  const CompiledProgram& compiled() const { return schedule_->compiled; }
  const std::shared_ptr<const SimSchedule>& schedule() const {
    return schedule_;
  }

 private:
  std::shared_ptr<const SimSchedule> schedule_;
};

namespace {

net::CollectiveOp NetOp(OpCode code) {
  switch (code) {
    case OpCode::kAllGather:
      return net::CollectiveOp::kAllGather;
    case OpCode::kReduceScatter:
      return net::CollectiveOp::kReduceScatter;
    case OpCode::kAllToAll:
      return net::CollectiveOp::kAllToAll;
    case OpCode::kCollectivePermute:
      return net::CollectiveOp::kCollectivePermute;
    default:
      return net::CollectiveOp::kAllReduce;
  }
}

Picoseconds Max(Picoseconds a, Picoseconds b) { return a < b ? b : a; }

}  // namespace

absl::StatusOr<std::unique_ptr<SimBackend>> SimBackend::Create(
    absl::string_view slice, SimBackendOptions options) {
  TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                          runtime::ParseSlice(slice));
  return Create(std::move(layout), options);
}

absl::StatusOr<std::unique_ptr<SimBackend>> SimBackend::Create(
    runtime::SliceLayout layout, SimBackendOptions options) {
  if (layout.generation == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SimBackend: layout '", layout.name,
        "' has no TPU generation (a plain layout); use a slice name"));
  }
  TPUSIM_ASSIGN_OR_RETURN(const ChipPreset* preset,
                          FindChipPreset(layout.generation->name));
  return CreateWithPreset(std::move(layout), *preset, options);
}

absl::StatusOr<std::unique_ptr<SimBackend>> SimBackend::Create(
    const proto::PodSpec& spec) {
  auto bad = [](absl::string_view field, auto value, absl::string_view want) {
    return absl::InvalidArgumentError(
        absl::StrCat("PodSpec: ", field, "=", value, ": ", want));
  };
  const bool by_shape = spec.has_generation() || spec.shape_size() > 0;
  if (spec.has_slice() == by_shape) {
    return absl::InvalidArgumentError(
        "PodSpec: set either `slice` or `generation` and `shape`");
  }
  runtime::SliceLayout layout;
  if (spec.has_slice()) {
    TPUSIM_ASSIGN_OR_RETURN(layout, runtime::ParseSlice(spec.slice()));
  } else {
    absl::StatusOr<const runtime::TpuGeneration*> found =
        runtime::FindTpuGeneration(spec.generation());
    if (!found.ok()) {
      return bad("generation", spec.generation(), found.status().message());
    }
    const runtime::TpuGeneration* g = *found;
    if (spec.shape_size() < 1 || spec.shape_size() > 3) {
      return bad("shape", absl::StrJoin(spec.shape(), "x"),
                 "must have 1 to 3 entries (x, y[, z])");
    }
    std::array<int, 3> mesh = {1, 1, 1};
    for (int i = 0; i < spec.shape_size(); ++i) mesh[i] = spec.shape(i);
    const std::string name =
        absl::StrCat(g->name, ":", absl::StrJoin(spec.shape(), "x"));
    if (spec.custom_shape()) {
      TPUSIM_ASSIGN_OR_RETURN(
          layout, runtime::LayoutCustomChipMesh(*g, mesh, runtime::kDefaultRank,
                                                name));
    } else {
      // Only the shapes of the generation's slices (strategy/runtime/slice.h).
      const std::string allowed = runtime::AllowedSliceNames(*g);
      bool ok = false;
      for (absl::string_view slice : absl::StrSplit(allowed, ", ")) {
        absl::StatusOr<std::array<int, 3>> m = runtime::SliceChipMesh(slice);
        ok = ok || (m.ok() && *m == mesh);
      }
      if (!ok) {
        return bad("shape", absl::StrJoin(spec.shape(), "x"),
                   absl::StrCat("not a ", g->name,
                                " slice shape (slices: ", allowed,
                                "; custom_shape allows any mesh)"));
      }
      TPUSIM_ASSIGN_OR_RETURN(
          layout,
          runtime::LayoutChipMesh(*g, mesh, runtime::kDefaultRank, name));
    }
  }
  TPUSIM_ASSIGN_OR_RETURN(const ChipPreset* base,
                          FindChipPreset(layout.generation->name));
  ChipPreset preset = *base;
  const proto::CustomNumbers& c = spec.custom();
  auto positive = [&](bool has, double v, absl::string_view field) {
    return !has || (v > 0 && std::isfinite(v))
               ? absl::OkStatus()
               : bad(absl::StrCat("custom.", field), v, "must be > 0");
  };
  TPUSIM_RETURN_IF_ERROR(positive(c.has_clock_ghz(), c.clock_ghz(), "clock_ghz"));
  TPUSIM_RETURN_IF_ERROR(
      positive(c.has_mxus_per_core(), c.mxus_per_core(), "mxus_per_core"));
  TPUSIM_RETURN_IF_ERROR(positive(c.has_hbm_gbps(), c.hbm_gbps(), "hbm_gbps"));
  TPUSIM_RETURN_IF_ERROR(positive(c.has_hbm_capacity_gib(),
                                  c.hbm_capacity_gib(), "hbm_capacity_gib"));
  TPUSIM_RETURN_IF_ERROR(
      positive(c.has_ici_link_gbps(), c.ici_link_gbps(), "ici_link_gbps"));
  TPUSIM_RETURN_IF_ERROR(positive(c.has_pcie_gbps(), c.pcie_gbps(), "pcie_gbps"));
  if (c.has_clock_ghz()) preset.clock_ghz = c.clock_ghz();
  if (c.has_mxus_per_core()) preset.mxus_per_core = c.mxus_per_core();
  if (c.has_hbm_gbps()) preset.hbm_gbps = c.hbm_gbps();
  if (c.has_hbm_capacity_gib()) {
    preset.hbm_capacity = common::Bytes(
        static_cast<int64_t>(c.hbm_capacity_gib() * (int64_t{1} << 30)));
  }
  if (c.has_ici_link_gbps()) preset.ici_link_achieved_gbps = c.ici_link_gbps();
  if (c.has_pcie_gbps()) preset.pcie_gbps = c.pcie_gbps();
  SimBackendOptions options;
  const proto::PodOptions& o = spec.options();
  if (o.has_wrap()) {
    TPUSIM_ASSIGN_OR_RETURN(options.wrap, net::ParseWrapMode(o.wrap()));
  }
  if (o.has_host_loop_overhead_us()) {
    if (!(o.host_loop_overhead_us() >= 0) ||
        !std::isfinite(o.host_loop_overhead_us())) {
      return bad("options.host_loop_overhead_us", o.host_loop_overhead_us(),
                 "must be >= 0");
    }
    options.host_loop_overhead = common::Picoseconds(
        static_cast<int64_t>(std::llround(o.host_loop_overhead_us() * 1e6)));
  }
  if (o.has_record_spans()) options.record_spans = o.record_spans();
  if (o.has_input_threads()) {
    if (o.input_threads() < 1) {
      return bad("options.input_threads", o.input_threads(), "must be >= 1");
    }
    options.input_threads = o.input_threads();
  }
  if (o.has_prefetch_depth()) {
    if (o.prefetch_depth() < 1) {
      return bad("options.prefetch_depth", o.prefetch_depth(), "must be >= 1");
    }
    options.prefetch_depth = o.prefetch_depth();
  }
  if (o.has_sim_threads()) {
    if (o.sim_threads() < 0 || o.sim_threads() > 1024) {
      return bad("options.sim_threads", o.sim_threads(),
                 "must be 0 (one per hardware thread) to 1024");
    }
    options.sim_threads = o.sim_threads();
  }
  return CreateWithPreset(std::move(layout), preset, options);
}

absl::StatusOr<std::unique_ptr<SimBackend>> SimBackend::CreateWithPreset(
    runtime::SliceLayout layout, const ChipPreset& preset,
    SimBackendOptions options) {
  std::unique_ptr<SimBackend> b(
      new SimBackend(std::move(layout), preset, options));
  HostOptions host;
  host.threads = options.input_threads;
  host.prefetch_depth = options.prefetch_depth;
  // PCIe per chip (sheet A.8); v3 has none published: model_constants.h
  // pcie_unpublished (chosen).
  host.pcie_bytes_per_second =
      b->preset_.pcie_gbps.value_or(ModelConstantValue("pcie_unpublished")) *
      1e9;
  host.keep_history = options.record_spans;
  TPUSIM_ASSIGN_OR_RETURN(SliceHosts hosts, SliceHosts::Create(b->layout_, host));
  b->hosts_ = std::make_unique<SliceHosts>(std::move(hosts));
  TPUSIM_ASSIGN_OR_RETURN(b->pod_,
                          SimPod::Create(b->layout_, b->preset_, options.wrap,
                                         options.sim_threads));
  return b;
}

SimBackend::SimBackend(runtime::SliceLayout layout, const ChipPreset& preset,
                       SimBackendOptions options)
    : layout_(std::move(layout)),
      preset_(preset),
      rates_(DeviceRates::FromPreset(preset)),
      options_(options) {
  runtime::HostBackendOptions host_options;
  host_options.num_threads = options_.host_threads;
  host_ = std::make_unique<runtime::HostBackend>(layout_.devices, host_options);
  variable_bytes_.assign(layout_.num_devices(), {});
  dma_.assign(layout_.num_devices(), {});
  next_dma_batch_.assign(layout_.num_devices(), 0);
  ResetProfile();
}

SimBackend::~SimBackend() = default;

absl::StatusOr<std::unique_ptr<runtime::Buffer>> SimBackend::TransferToDevice(
    int device_id, const runtime::Tensor& value,
    const runtime::TransferOptions& options) {
  TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Buffer> buffer,
                          host_->TransferToDevice(device_id, value, options));
  // Timed when a call uses it (one batch per device and iteration).
  infeed_[buffer.get()] =
      Infeed{device_id, value.byte_size(), options.host_cost};
  return buffer;
}

absl::StatusOr<runtime::Tensor> SimBackend::TransferFromDevice(
    const runtime::Buffer& buffer) {
  return host_->TransferFromDevice(buffer);
}

absl::StatusOr<std::unique_ptr<runtime::Executable>> SimBackend::Compile(
    const runtime::Program& program, const runtime::CompileOptions& options) {
  TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Executable> host,
                          host_->Compile(program, options));
  TPUSIM_ASSIGN_OR_RETURN(CompiledProgram compiled,
                          CompileProgram(host->program(), CompileOptions{}));
  return std::unique_ptr<runtime::Executable>(
      new SimExecutable(std::move(host), std::move(compiled)));
}

absl::Status SimBackend::WriteVariable(int device_id, int slot,
                                       const runtime::Tensor& value) {
  TPUSIM_RETURN_IF_ERROR(host_->WriteVariable(device_id, slot, value));
  variable_bytes_[device_id][slot] = value.byte_size();
  return absl::OkStatus();
}

absl::StatusOr<runtime::Tensor> SimBackend::ReadVariable(int device_id,
                                                         int slot) const {
  return host_->ReadVariable(device_id, slot);
}

absl::StatusOr<runtime::SpmdOutputs> SimBackend::ExecuteSpmd(
    const runtime::Executable& executable,
    const runtime::SpmdAssignment& assignment,
    absl::Span<const std::vector<runtime::Buffer*>> per_replica_args) {
  std::vector<std::vector<std::vector<runtime::Buffer*>>> iterations = {
      std::vector<std::vector<runtime::Buffer*>>(per_replica_args.begin(),
                                                 per_replica_args.end())};
  return Execute(executable, assignment, iterations, /*loop=*/false);
}

absl::StatusOr<runtime::SpmdOutputs> SimBackend::ExecuteSpmdLoop(
    const runtime::Executable& executable,
    const runtime::SpmdAssignment& assignment,
    absl::Span<const std::vector<std::vector<runtime::Buffer*>>>
        per_iteration_args) {
  return Execute(executable, assignment, per_iteration_args, /*loop=*/true);
}

absl::StatusOr<runtime::SpmdOutputs> SimBackend::Execute(
    const runtime::Executable& executable,
    const runtime::SpmdAssignment& assignment,
    absl::Span<const std::vector<std::vector<runtime::Buffer*>>> iterations,
    bool loop) {
  const auto* exe = dynamic_cast<const SimExecutable*>(&executable);
  if (exe == nullptr) {
    return absl::InvalidArgumentError(
        "SimBackend: the executable was not compiled by this backend");
  }
  const runtime::Program& program = exe->program();
  const CompiledProgram& compiled = exe->compiled();
  // HBM capacity, per device, before anything runs (sim/compile's footprint:
  // variables, parameters, infeed buffers, constants and the schedule's peak
  // live set). The host backend checks the assignment itself; only
  // well-formed entries are looked at here.
  const int num_devices = layout_.num_devices();
  for (size_t r = 0; r < assignment.replica_devices.size(); ++r) {
    const std::vector<int>& devs = assignment.replica_devices[r];
    for (size_t c = 0; c < devs.size() && c < compiled.memory.size(); ++c) {
      const int d = devs[c];
      if (d < 0 || d >= num_devices) continue;
      const CoreMemory& m = compiled.memory[c];
      int64_t written = 0;
      for (const auto& [slot, bytes] : variable_bytes_[d]) written += bytes;
      const int64_t variables =
          std::max(written, m.variables + m.optimizer_state);
      const int64_t need = m.total() - m.variables - m.optimizer_state +
                           variables;
      const int64_t capacity = rates_.hbm_capacity.count();
      if (need > capacity) {
        const runtime::DeviceDescription& dd = layout_.devices[d];
        return absl::ResourceExhaustedError(absl::StrCat(
            "program ", program.name(), " does not fit in HBM of device ", d,
            " (task ", dd.task, ", TPU:", dd.ordinal, ", coords (",
            absl::StrJoin(dd.coords, ","), ")): needs ", need,
            " bytes (variables ", variables, ", parameters ", m.parameters,
            ", infeed buffers ", m.infeed, ", constants ", m.constants,
            ", peak live values ", m.live_peak, "), capacity ", capacity,
            " bytes; largest live values: ",
            absl::StrJoin(m.largest_at_peak, ", ")));
      }
      timing_[d].peak_hbm_bytes = std::max(timing_[d].peak_hbm_bytes, need);
    }
  }
  // The infeed batches of the call: per iteration, per device, the
  // transferred arguments it reads (taken out of infeed_ now, so a failed
  // call leaves nothing behind).
  std::vector<std::map<int, Infeed>> batches(iterations.size());
  for (size_t k = 0; k < iterations.size(); ++k) {
    for (const std::vector<runtime::Buffer*>& args : iterations[k]) {
      for (const runtime::Buffer* b : args) {
        auto it = infeed_.find(b);
        if (it == infeed_.end()) continue;
        Infeed& batch = batches[k]
                            .try_emplace(it->second.device,
                                         Infeed{it->second.device, 0,
                                                Picoseconds(0)})
                            .first->second;
        batch.bytes += it->second.bytes;
        // A sum past int64 saturates; the host model then reports the
        // batch's times as out of range.
        batch.host_cost = Picoseconds(
            common::CheckedAdd(batch.host_cost.count(),
                               it->second.host_cost.count())
                .value_or(std::numeric_limits<int64_t>::max()));
        infeed_.erase(it);
      }
    }
  }
  // A timing error of an earlier call fails this one (its values would be
  // right, but the timeline is not).
  TPUSIM_RETURN_IF_ERROR(settle_error_);
  absl::StatusOr<runtime::SpmdOutputs> outputs =
      loop ? host_->ExecuteSpmdLoop(exe->host(), assignment, iterations)
           : host_->ExecuteSpmd(exe->host(), assignment, iterations[0]);
  if (!outputs.ok()) return outputs.status();
  // Queue the call's batches in the host model (that carries no time: the
  // pipeline's order is the order they are added), then time what is ready.
  PendingCall call;
  call.number = ++calls_;
  call.exe = exe->schedule();
  call.assignment = assignment;
  call.batches.resize(iterations.size());
  for (size_t k = 0; k < iterations.size(); ++k) {
    for (const auto& [d, batch] : batches[k]) {
      TPUSIM_ASSIGN_OR_RETURN(
          call.batches[k][d], hosts_->AddBatch(d, batch.host_cost, batch.bytes));
    }
  }
  call.added.resize(num_devices);
  for (int d = 0; d < num_devices; ++d) call.added[d] = hosts_->added(d);
  pending_.push_back(std::move(call));
  TPUSIM_RETURN_IF_ERROR(Settle(/*all=*/false));
  return outputs;
}

absl::Status SimBackend::Settle(bool all) const {
  // tpusim's choice: at most this many calls wait to be timed.
  constexpr size_t kMaxPendingCalls = 16;
  const int64_t depth = options_.prefetch_depth;
  auto ready = [&](const PendingCall& c) {
    if (all || pending_.size() > kMaxPendingCalls) return true;
    // Every device fed so far has `depth` batches queued after the call's:
    // a later batch waits for one of those to be taken, after the call.
    for (size_t d = 0; d < c.added.size(); ++d) {
      if (c.added[d] > 0 && hosts_->added(static_cast<int>(d)) <
                                c.added[d] + depth) {
        return false;
      }
    }
    return true;
  };
  while (settle_error_.ok() && !pending_.empty() && ready(pending_.front())) {
    const PendingCall call = std::move(pending_.front());
    pending_.pop_front();
    absl::Status st = Simulate(call);
    if (!st.ok()) {
      settle_error_ = absl::Status(
          st.code(), absl::StrCat("timing call ", call.number, " (program ",
                                  call.exe->program().name(),
                                  ") on the simulated pod: ", st.message()));
      pending_.clear();
    }
  }
  return settle_error_;
}

absl::Status SimBackend::RegisterInfeedDma(int d) const {
  // Batch i waits for the take of batch i - depth: later ones cannot be
  // timed yet, so they are not asked for (no error made per take).
  const int64_t timeable = std::min(
      hosts_->added(d), hosts_->taken(d) + options_.prefetch_depth);
  for (int64_t& i = next_dma_batch_[d]; i < timeable; ++i) {
    absl::StatusOr<BatchTiming> t = hosts_->Timing(d, i);
    // Not timeable yet: it waits behind another device's batch in the
    // pipeline (FailedPrecondition); or taken already, before it could be
    // registered (NotFound).
    if (absl::IsFailedPrecondition(t.status())) break;
    if (absl::IsNotFound(t.status())) continue;
    if (!t.ok()) return t.status();
    if (t->dma_start < t->arrival && t->bytes > 0) {
      dma_[d].push_back(
          DmaWindow{t->dma_start, t->arrival,
                    static_cast<double>(t->bytes) /
                        ((t->arrival - t->dma_start).count() * 1e-12)});
    }
  }
  return absl::OkStatus();
}

absl::Status SimBackend::Simulate(const PendingCall& call_info) const {
  const SimSchedule& exe = *call_info.exe;
  const runtime::SpmdAssignment& assignment = call_info.assignment;
  const runtime::Program& program = exe.program();
  const CompiledProgram& compiled = exe.compiled;
  const std::vector<Kernel>& kernels = compiled.kernels;
  const int num_devices = layout_.num_devices();
  const std::vector<runtime::Op>& ops = program.ops();
  const int replicas = assignment.num_replicas();
  const int cores = program.num_cores_per_replica();
  const Picoseconds call = now_;
  const Picoseconds begin = call + options_.host_loop_overhead;
  auto dev = [&](int r, int c) { return assignment.replica_devices[r][c]; };
  // Per (replica, core): the device clock and its accounting; per (kernel,
  // replica): when the kernel finished.
  std::vector<Picoseconds> clock(static_cast<size_t>(replicas) * cores, begin);
  std::vector<Picoseconds> exposed(clock.size(), Picoseconds(0));
  std::vector<Picoseconds> infeed(clock.size(), Picoseconds(0));
  std::vector<Picoseconds> input(clock.size(), Picoseconds(0));
  // The (replica, core) slot of each device of the assignment.
  std::vector<int> slot_of(num_devices, -1);
  for (int r = 0; r < replicas; ++r) {
    for (int c = 0; c < cores; ++c) slot_of[dev(r, c)] = r * cores + c;
  }
  std::vector<Picoseconds> collective_time(clock.size(), Picoseconds(0));
  if (options_.record_spans) {
    for (int r = 0; r < replicas; ++r) {
      for (int c = 0; c < cores; ++c) {
        spans_.push_back(
            {dev(r, c), "host loop", call.count(), begin.count(), "host"});
      }
    }
  }
  std::vector<Picoseconds> finished(kernels.size() * replicas, Picoseconds(0));
  // The network collective of each start kernel (-1: none pending).
  std::vector<int> collective_of(kernels.size(), -1);
  pod_->ClearCollectives();
  const double hbm_rate = rates_.hbm_bytes_per_second;

  // The device waits for its batch when a kernel first reads an argument.
  std::map<int, int64_t> untaken;  // device -> its batch of this iteration
  auto take = [&](int d, Picoseconds ready,
                  bool wait) -> absl::StatusOr<Picoseconds> {
    auto it = untaken.find(d);
    if (it == untaken.end()) return ready;
    TPUSIM_ASSIGN_OR_RETURN(Taken t, hosts_->Take(d, it->second, ready));
    untaken.erase(it);
    // The take frees a prefetch slot: a later batch can now be timed.
    TPUSIM_RETURN_IF_ERROR(RegisterInfeedDma(d));
    if (!wait) return ready;
    const size_t slot = slot_of[d];
    input[slot] += t.input_wait;
    infeed[slot] += t.infeed_wait;
    if (options_.record_spans) {
      const Picoseconds input_end = ready + t.input_wait;
      if (t.input_wait.count() > 0) {
        spans_.push_back({d, "input pipeline", ready.count(),
                          input_end.count(), "input"});
      }
      if (t.infeed_wait.count() > 0) {
        spans_.push_back({d, "infeed", input_end.count(), t.start.count(),
                          "infeed"});
      }
    }
    return t.start;
  };

  const size_t num_iterations = call_info.batches.size();
  for (size_t iteration = 0; iteration < num_iterations; ++iteration) {
    for (const auto& [d, index] : call_info.batches[iteration]) {
      untaken[d] = index;
      TPUSIM_RETURN_IF_ERROR(RegisterInfeedDma(d));
    }
    for (size_t k = 0; k < kernels.size(); ++k) {
      const Kernel& kernel = kernels[k];
      const int c = kernel.core;
      if (kernel.kind == CompiledKernelKind::kCollectiveStart) {
        const runtime::Op& op = ops[kernel.op_ids.back()];
        SimPod::Collective col;
        std::vector<std::vector<int>> groups;
        std::vector<bool> member(num_devices, false);
        col.request.op = NetOp(op.code);
        col.request.algorithm = net::Algorithm::kAuto;
        int group_size = 1;
        if (op.code == OpCode::kCollectivePermute) {
          std::vector<std::pair<int, int>> pairs;
          for (const auto& [from, to] : op.attrs.source_target_pairs) {
            pairs.push_back({dev(static_cast<int>(from), c),
                             dev(static_cast<int>(to), c)});
          }
          TPUSIM_ASSIGN_OR_RETURN(
              col.request.pairs,
              net::PermutePairs::Create(pod_->topology(), std::move(pairs)));
          col.trivial = col.request.pairs->pairs().empty();
          group_size = 2;
        } else {
          TPUSIM_ASSIGN_OR_RETURN(
              std::vector<std::vector<int64_t>> rgroups,
              runtime::ResolveReplicaGroups(op.code, op.attrs.replica_groups,
                                            replicas));
          for (const auto& g : rgroups) {
            std::vector<int> devs;
            for (int64_t r : g) {
              devs.push_back(dev(static_cast<int>(r), c));
              member[devs.back()] = true;
            }
            groups.push_back(std::move(devs));
          }
          for (int d = 0; d < num_devices; ++d) {
            if (!member[d]) groups.push_back({d});
          }
          group_size = static_cast<int>(rgroups[0].size());
          col.trivial = group_size == 1;
          TPUSIM_ASSIGN_OR_RETURN(
              col.request.groups,
              net::GroupPartition::Create(pod_->topology(), std::move(groups)));
        }
        // sim/net needs a size that divides by the group: XLA pads to it too.
        const int64_t n = group_size;
        col.request.bytes =
            std::max<int64_t>(n, (kernel.collective_bytes + n - 1) / n * n);
        for (int r = 0; r < replicas; ++r) col.devices.push_back(dev(r, c));
        // The DMA of a member: it sends `sent` bytes (read from HBM) and
        // receives as many (written to HBM), at best within the op's own
        // bandwidth bound (sim/net's CollectiveLowerBound); tpusim models
        // that HBM traffic as spread over that window from the start.
        Picoseconds dma_window(0);
        double dma_bytes_per_second = 0;
        if (!col.trivial) {
          const int group =
              col.request.groups != nullptr
                  ? col.request.groups->group_of(dev(0, c))
                  : 0;
          dma_window = net::CollectiveLowerBound(pod_->topology(),
                                                 pod_->config(), col.request,
                                                 group)
                           .bandwidth;
          const double s = static_cast<double>(col.request.bytes);
          const double frac =
              static_cast<double>(group_size - 1) / std::max(1, group_size);
          double sent = frac * s;  // all_gather, reduce_scatter, all_to_all
          if (op.code == OpCode::kAllReduce) sent = 2 * frac * s;
          if (op.code == OpCode::kCollectivePermute) sent = s;
          if (dma_window.count() > 0) {
            dma_bytes_per_second = 2 * sent / (dma_window.count() * 1e-12);
          }
        }
        const int id = pod_->AddCollective(std::move(col));
        collective_of[k] = id;
        for (int r = 0; r < replicas; ++r) {
          Picoseconds at = clock[r * cores + c];
          for (int dep : kernel.deps) at = Max(at, finished[dep * replicas + r]);
          // A collective of an argument waits for the device's batch.
          if (!exe.kernel_parameters[k].empty()) {
            TPUSIM_ASSIGN_OR_RETURN(at, take(dev(r, c), at, /*wait=*/true));
            clock[r * cores + c] = Max(clock[r * cores + c], at);
          }
          if (dma_bytes_per_second > 0) {
            dma_[dev(r, c)].push_back(
                DmaWindow{at, at + dma_window, dma_bytes_per_second});
          }
          // A start is issued and returns at once.
          finished[k * replicas + r] = at;
          pod_->Schedule(id, r, at);
          ++stats_.collectives;
        }
        continue;
      }
      if (kernel.kind == CompiledKernelKind::kCollectiveDone) {
        const int start = kernel.pair;
        const int id = collective_of[start];
        TPUSIM_RETURN_IF_ERROR(pod_->Resolve(id));
        SimPod::Collective& col = pod_->collective(id);
        for (int r = 0; r < replicas; ++r) {
          const size_t slot = r * cores + c;
          const Picoseconds end = col.end[r];
          collective_time[slot] += end - col.start[r];
          Picoseconds ready = clock[slot];
          for (int dep : kernel.deps) {
            if (dep != start) ready = Max(ready, finished[dep * replicas + r]);
          }
          if (ready < end) {
            exposed[slot] += end - ready;
            if (options_.record_spans) {
              spans_.push_back({dev(r, c), kernel.name, ready.count(),
                                end.count(), "collective"});
            }
          }
          const Picoseconds done = Max(ready, end);
          clock[slot] = done;
          finished[k * replicas + r] = done;
        }
        continue;
      }
      for (int r = 0; r < replicas; ++r) {
        const size_t slot = r * cores + c;
        const int d = dev(r, c);
        Picoseconds ready = clock[slot];
        for (int dep : kernel.deps) ready = Max(ready, finished[dep * replicas + r]);
        // Its arguments must be on the device: the first kernel that reads
        // one waits for the device's batch.
        if (!exe.kernel_parameters[k].empty()) {
          TPUSIM_ASSIGN_OR_RETURN(ready, take(d, ready, /*wait=*/true));
        }
        Picoseconds end = ready;
        if (kernel.kind == CompiledKernelKind::kCopy) {
          // A value from another logical core: one link (or the on-chip path)
          // at its rate plus the hops' latency (no contention modelled).
          const int from = dev(r, kernel.copy_from_core);
          const int a = pod_->topology().chip_of_device(from);
          const int b = pod_->topology().chip_of_device(d);
          const bool on_chip = a == b;
          const double rate = on_chip ? pod_->config().on_chip_bytes_per_second
                                      : pod_->config().link_bytes_per_second;
          const Picoseconds latency =
              on_chip ? pod_->config().on_chip_latency
                      : pod_->config().hop_latency *
                            std::max(1, pod_->topology().Hops(a, b));
          end = ready + latency +
                TimeAtRate(static_cast<double>(kernel.copy_bytes), rate);
          if (options_.record_spans) {
            spans_.push_back(
                {d, kernel.name, ready.count(), end.count(), "collective"});
          }
        } else {
          // HBM is shared with the DMA in flight on the device (collective
          // and infeed): see HbmShare.
          std::vector<DmaWindow>& windows = dma_[d];
          windows.erase(std::remove_if(windows.begin(), windows.end(),
                                       [&](const DmaWindow& w) {
                                         return w.end <= ready;
                                       }),
                        windows.end());
          const double share = HbmShare(
              static_cast<double>(kernel.work.hbm_bytes), ready, windows,
              hbm_rate);
          const KernelTime t = KernelDuration(rates_, kernel.work, share);
          ++stats_.kernels;
          end = ready + t.total;
          DeviceTiming& tp = timing_[d];
          tp.mxu_busy_ps += t.mxu.count();
          tp.busy_ps += t.total.count();
          tp.hbm_bytes += kernel.work.hbm_bytes;
          if (options_.record_spans) {
            spans_.push_back(
                {d, kernel.name, ready.count(), end.count(), t.category});
          }
        }
        clock[slot] = end;
        finished[k * replicas + r] = end;
      }
    }
    // A batch no kernel read is dequeued when the device ends the iteration
    // (it waits for nothing).
    while (!untaken.empty()) {
      const int d = untaken.begin()->first;
      const int slot = slot_of[d];
      TPUSIM_RETURN_IF_ERROR(
          take(d, slot >= 0 ? clock[slot] : call, /*wait=*/false).status());
    }
    // Collectives nobody waited for still end within the iteration: a TPU
    // while loop carries its state into the next one.
    for (size_t k = 0; k < kernels.size(); ++k) {
      if (kernels[k].kind != CompiledKernelKind::kCollectiveStart) continue;
      const int id = collective_of[k];
      if (id < 0) continue;
      TPUSIM_RETURN_IF_ERROR(pod_->Resolve(id));
      SimPod::Collective& col = pod_->collective(id);
      for (int r = 0; r < replicas; ++r) {
        const size_t slot = r * cores + kernels[k].core;
        clock[slot] = Max(clock[slot], col.end[r]);
      }
    }
  }
  // The call ends when every device has finished.
  Picoseconds end = begin;
  size_t last = 0;
  for (size_t k = 0; k < clock.size(); ++k) {
    if (end < clock[k]) {
      end = clock[k];
      last = k;
    }
  }
  Step step;
  step.start_ps = call.count();
  step.end_ps = end.count();
  step.steps = static_cast<int64_t>(num_iterations);
  step.exposed_collective_ps = exposed[last].count();
  step.hidden_collective_ps =
      std::max<int64_t>(0, (collective_time[last] - exposed[last]).count());
  step.infeed_wait_ps = infeed[last].count();
  step.input_wait_ps = input[last].count();
  step.host_overhead_ps = options_.host_loop_overhead.count();
  steps_.push_back(step);
  now_ = end;
  // Host spans: each batch's pipeline work and its PCIe transfer.
  if (options_.record_spans) {
    // History() pairs a host with a batch (whose device id is global).
    for (const auto& [host, b] : hosts_->History()) {
      const int device = b.device;
      if (b.produce_start < b.produce_end) {
        spans_.push_back(Span{-1,
                              absl::StrCat("input batch ", b.index,
                                           " for device ", device),
                              b.produce_start.count(), b.produce_end.count(),
                              "pipeline", host});
      }
      if (b.dma_start < b.arrival) {
        spans_.push_back(Span{-1, absl::StrCat("infeed to device ", device),
                              b.dma_start.count(), b.arrival.count(), "pcie",
                              host});
      }
    }
    hosts_->ClearHistory();
  }
  return absl::OkStatus();
}

Picoseconds SimBackend::Now() const {
  (void)Settle(/*all=*/true);  // an error is CollectProfile's to return
  return now_;
}

double SimBackend::HbmShare(double bytes, Picoseconds ready,
                            absl::Span<const DmaWindow> windows,
                            double hbm_rate) {
  if (bytes <= 0 || windows.empty()) return hbm_rate;
  // Segment by segment from `ready`: each ends where the DMA rate next
  // changes (a window starts or ends). A few windows at most: no sorting and
  // no allocation in the kernel loop.
  constexpr Picoseconds kNever(std::numeric_limits<int64_t>::max());
  double left = bytes, seconds = 0;
  Picoseconds t = ready;
  for (;;) {
    Picoseconds cut = kNever;
    double dma = 0;
    for (const DmaWindow& w : windows) {
      if (t < w.start) {
        cut = std::min(cut, w.start);
      } else if (t < w.end) {
        dma += w.rate;
        cut = std::min(cut, w.end);
      }
    }
    if (cut == kNever) break;
    const double rate = std::max(hbm_rate - dma, hbm_rate / 2);
    const double span = (cut - t).count() * 1e-12;
    if (left <= rate * span) {
      seconds += left / rate;
      return bytes / seconds;
    }
    left -= rate * span;
    seconds += span;
    t = cut;
  }
  seconds += left / hbm_rate;
  return bytes / seconds;
}

absl::StatusOr<runtime::Profile> SimBackend::CollectProfile() const {
  TPUSIM_RETURN_IF_ERROR(Settle(/*all=*/true));
  TPUSIM_ASSIGN_OR_RETURN(runtime::Profile p, host_->CollectProfile());
  p.set_backend("sim");
  for (int d = 0; d < p.devices_size() && d < static_cast<int>(timing_.size());
       ++d) {
    runtime::DeviceProfile& dp = *p.mutable_devices(d);
    const DeviceTiming& t = timing_[d];
    dp.set_mxu_busy_ps(t.mxu_busy_ps);
    dp.set_busy_ps(t.busy_ps);
    dp.set_hbm_bytes(t.hbm_bytes);
    dp.set_peak_hbm_bytes(t.peak_hbm_bytes);
    dp.set_hbm_capacity_bytes(rates_.hbm_capacity.count());
  }
  for (const Span& s : spans_) {
    runtime::TimelineSpan* span = p.add_spans();
    span->set_device_id(s.device_id);
    span->set_name(s.name);
    span->set_start_ps(s.start_ps);
    span->set_end_ps(s.end_ps);
    span->set_category(s.category);
    span->set_host(s.host);
  }
  for (const Step& s : steps_) {
    runtime::StepProfile* step = p.add_steps();
    step->set_start_ps(s.start_ps);
    step->set_end_ps(s.end_ps);
    step->set_steps(s.steps);
    step->set_exposed_collective_ps(s.exposed_collective_ps);
    step->set_hidden_collective_ps(s.hidden_collective_ps);
    step->set_infeed_wait_ps(s.infeed_wait_ps);
    step->set_input_wait_ps(s.input_wait_ps);
    step->set_host_overhead_ps(s.host_overhead_ps);
  }
  p.set_end_ps(now_.count());
  const net::Topology& topo = pod_->topology();
  const std::vector<net::LinkStats> links = pod_->network().Links();
  for (size_t index = 0; index < links.size(); ++index) {
    const net::LinkStats& l = links[index];
    runtime::LinkProfile* lp = p.add_links();
    lp->set_chip(l.chip);
    for (int c : topo.coords(l.chip)) lp->add_coords(c);
    if (l.dir < net::kNumDirections) {
      lp->set_dim(net::DirectionDim(l.dir));
      lp->set_direction(net::DirectionIsPositive(l.dir) ? 1 : -1);
    } else {
      lp->set_dim(3);
      lp->set_direction(l.dir == net::kNumDirections ? 1 : -1);
    }
    int64_t bytes = l.bytes, busy = l.busy.count();
    if (index < link_base_.size()) {
      bytes -= link_base_[index].first;
      busy -= link_base_[index].second;
    }
    lp->set_bytes(bytes);
    lp->set_busy_ps(busy);
  }
  return p;
}

SimBackend::SimStats SimBackend::Stats() const {
  (void)Settle(/*all=*/true);  // an error is CollectProfile's to return
  SimStats s = stats_;
  s.network_events = pod_->network().events();
  for (int d = 0; d < layout_.num_devices(); ++d) {
    s.network_messages += pod_->network().endpoint(d).stats().messages_sent;
  }
  s.network_threads = pod_->network().threads();
  s.network_parallel_batches = pod_->network().parallel_batches();
  s.late_starts = pod_->late_starts();
  return s;
}

void SimBackend::ResetProfile() {
  // The calls before the reset are timed first (an error stays for the next
  // Execute or CollectProfile).
  (void)Settle(/*all=*/true);
  host_->ResetProfile();
  timing_.assign(layout_.num_devices(), DeviceTiming{});
  spans_.clear();
  steps_.clear();
  link_base_.clear();
  if (hosts_ != nullptr) hosts_->ClearHistory();
  if (pod_ != nullptr) {
    for (const net::LinkStats& l : pod_->network().Links()) {
      link_base_.push_back({l.bytes, l.busy.count()});
    }
  }
}

}  // namespace tpusim::sim
