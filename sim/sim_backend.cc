#include "sim/sim_backend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/check.h"
#include "common/int_math.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "sim/kernel.h"
#include "sim/compile/compile.h"
#include "sim/net/collective.h"
#include "sim/net/network.h"
#include "sim/net_preset.h"
#include "sim/pod.pb.h"
#include "strategy/runtime/ops.h"

namespace tpusim::sim {

using common::Picoseconds;
using runtime::OpCode;

// The SystemC side: the kernel session and the ICI network, plus the queue of
// collective starts that the step walk hands to it in time order.
class SimPod {
 public:
  static absl::StatusOr<std::unique_ptr<SimPod>> Create(
      const runtime::SliceLayout& layout, const ChipPreset& preset,
      net::WrapMode wrap, int threads, net::CollectiveDataPath* data_path) {
    TPUSIM_ASSIGN_OR_RETURN(net::Topology topology,
                            net::Topology::Create(layout, wrap));
    TPUSIM_ASSIGN_OR_RETURN(net::NetConfig config, NetConfigFromPreset(preset));
    std::unique_ptr<SimPod> pod(new SimPod(std::move(topology), config));
    SimPod* p = pod.get();
    TPUSIM_ASSIGN_OR_RETURN(
        p->session_,
        KernelSession::Create([p, threads, data_path]() -> absl::Status {
          net::NetworkOptions options;
          options.name = "pod_ici";
          options.threads = threads;
          options.data_path = data_path;
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
  // the walk reaches it, and its end, filled in by the network. A cross-core
  // copy is one too: a permute whose members are the receiving devices (by
  // replica), then the sending ones.
  struct Collective {
    net::CollectiveRequest request;
    std::vector<Picoseconds> start;  // by member index
    std::vector<Picoseconds> end;
    std::vector<int> devices;        // by member index
    std::vector<int> slots;          // by member: the walk's slot that waits
    std::string name;                // the start kernel's
    std::vector<char> waited;        // by member: a blocked walk waits
    int remaining = 0;
    bool checked = false;  // against its lower bound
    bool trivial = false;  // groups of one: no traffic, ends at its start
  };

  int AddCollective(Collective c) {
    c.remaining = static_cast<int>(c.devices.size());
    c.end.assign(c.devices.size(), Picoseconds(-1));
    c.start.assign(c.devices.size(), Picoseconds(-1));
    c.waited.assign(c.devices.size(), 0);
    collectives_.push_back(std::move(c));
    return static_cast<int>(collectives_.size()) - 1;
  }
  Collective& collective(int id) { return collectives_[id]; }

  // A channel id for a collective whose members start it in no common order
  // (net::CollectiveRequest::channel): 1, 2, ... (wrapping long after any
  // collective that used one has ended).
  uint32_t NewChannel() {
    next_channel_ = next_channel_ % (net::kChannelSeqBit - 1) + 1;
    return next_channel_;
  }

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

  // Member `member` of collective `id` has not ended: the walk waits for it
  // (RunUntilWaitedEnd stops at its end).
  void Wait(int id, int member) { collectives_[id].waited[member] = 1; }

  // Runs the network (starting the members due) until a waited member ends;
  // returns the (collective, member) pairs that ended, in end order.
  // Internal error when nothing is left to run and none ended.
  absl::StatusOr<std::vector<std::pair<int, int>>> RunUntilWaitedEnd() {
    woken_.clear();
    while (woken_.empty()) {
      if (!queue_.empty()) {
        const int64_t next = queue_.top().time;
        if (next > Now().count()) {
          TPUSIM_RETURN_IF_ERROR(
              session_->RunFor(Picoseconds(next - Now().count())).status());
          if (!woken_.empty()) break;
        }
        TPUSIM_RETURN_IF_ERROR(StartDue());
        continue;
      }
      TPUSIM_RETURN_IF_ERROR(session_->RunUntilIdle().status());
      if (woken_.empty() && queue_.empty()) {
        return absl::InternalError(
            "the walk waits for collectives that never finish (a group "
            "member did not start)");
      }
    }
    return std::move(woken_);
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
    if (check_bounds_ && !c.checked && !c.trivial) {
      c.checked = true;
      TPUSIM_RETURN_IF_ERROR(CheckLowerBound(c));
    }
    return absl::OkStatus();
  }

  // Check each collective against its lower bound as it ends.
  void set_check_bounds(bool on) { check_bounds_ = on; }

  // Starts that the walk placed before the network's current time: none by
  // design (Simulate's walk); the first would be an error naming the
  // collective, the device and both times, never clamped.
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
      Collective& c = collectives_[p.id];
      if (p.time < Now().count()) {
        ++late_starts_;
        return absl::InternalError(absl::StrCat(
            "causality: collective ", c.name, " (", p.id,
            " of the call) would start on device ", p.device, " at ", p.time,
            " ps, before the network's clock ", Now().count(),
            " ps (the network ran ahead for another collective); a late start "
            "is an error, never clamped"));
      }
      const int id = p.id;
      const int member = p.member;
      TPUSIM_RETURN_IF_ERROR(network_->endpoint(p.device).Start(
          c.request, [this, id, member](const net::CollectiveResult& r) {
            Collective& done = collectives_[id];
            done.end[member] = r.end;
            const bool last = --done.remaining == 0;
            if (done.waited[member]) {
              done.waited[member] = 0;
              woken_.push_back({id, member});
              session_->Pause();
            } else if (last && awaited_ == id) {
              session_->Pause();
            }
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
  std::vector<std::pair<int, int>> woken_;  // RunUntilWaitedEnd's
  int64_t late_starts_ = 0;
  bool check_bounds_ = false;
  uint32_t next_channel_ = 0;

  // Per group (or for the pairs of a permute): from its first member's start
  // to its last member's end >= net::CollectiveLowerBound (every member's
  // part lies in that span).
  absl::Status CheckLowerBound(const Collective& c) const {
    std::map<int, std::pair<Picoseconds, Picoseconds>> span;  // group -> span
    for (size_t m = 0; m < c.devices.size(); ++m) {
      const int g = c.request.groups != nullptr
                        ? c.request.groups->group_of(c.devices[m])
                        : 0;
      auto [it, fresh] = span.try_emplace(g, c.start[m], c.end[m]);
      if (!fresh) {
        it->second.first = std::min(it->second.first, c.start[m]);
        it->second.second = std::max(it->second.second, c.end[m]);
      }
    }
    for (const auto& [g, s] : span) {
      const net::LowerBound bound =
          net::CollectiveLowerBound(topology_, config_, c.request, g);
      const Picoseconds took = s.second - s.first;
      if (took < bound.value()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "pod invariant: collective ", c.name, " (group ", g, ") took ",
            took.count(), " ps, below its lower bound ", bound.value().count(),
            " ps by ", (bound.value() - took).count(), " ps"));
      }
    }
    return absl::OkStatus();
  }
};

// The chips' side of their collectives (sim/net's CollectiveDataPath): the
// vector unit reduces as the default data path does, and every chunk's HBM
// traffic is reserved on its device's HBM timeline (sim/chip/chip.h), so the
// network waits for the DMA:
// * a chunk received is written (and read too, when it is reduced) from its
//   first byte's arrival at up to the HBM rate;
// * a chunk sent is read by the device's send DMA, one chunk after another
//   in send order, at up to the device's injection rate (its chip's ICI
//   links x B, plus the on-chip path on v2/v3: what can leave at once).
// A chunk is late only by as much as its DMA ends after both its own
// availability (the tail of its arrival) and the DMA alone would: its head
// and tail then leave (or its result is ready) that much later. (The send
// DMA's own queue delays nothing: the links queue the chunks anyway; tpusim's
// choice, so that an idle pod's collectives take what sim/net alone gives
// them.) Called from the network's threads for one chip's devices at a
// time: per-device state only.
class HbmDataPath final : public net::CollectiveDataPath {
 public:
  HbmDataPath(const net::Topology& topology, const net::NetConfig& config)
      : inner_(config, topology.num_devices()),
        devices_(topology.num_devices()) {
    for (int d = 0; d < topology.num_devices(); ++d) {
      double rate = topology.NumLinks(topology.chip_of_device(d)) *
                    config.link_bytes_per_second;
      if (topology.devices_per_chip() == 2) {
        rate += config.on_chip_bytes_per_second;
      }
      devices_[d].injection = rate;
    }
  }
  void set_hbm(int device, HbmArbiter* hbm) { devices_[device].hbm = hbm; }
  // What the walk may still reserve on `device`'s HBM, set by the walk when
  // its slot stops: nothing before `floor` (its core's clock, or, while the
  // core waits for an end the network owes it, which comes after anything the
  // network does meanwhile, nothing of its own; and no copy it sends starts
  // before the receiving core's clock). With the network's own floor
  // (ChunkWork::floor) this is how far back the device's HBM timeline is
  // kept while the network runs (HbmArbiter::Forget).
  void SetWalkFloor(int device, Picoseconds floor) {
    devices_[device].walk_floor = floor;
  }

  net::ChunkTiming Process(int device, net::ChunkTiming in,
                           const net::ChunkWork& work) override {
    net::ChunkTiming out = inner_.Process(device, in, work);
    const double bytes =
        static_cast<double>(work.bytes_read + work.bytes_written);
    if (bytes <= 0) return out;
    PerDevice& dev = devices_[device];
    dev.hbm->Forget(std::min(work.floor, dev.walk_floor));
    const bool send = work.bytes_written == 0;
    Picoseconds start = in.head;
    double rate = dev.hbm->bytes_per_second();
    if (send) {
      start = Max(start, dev.send_free);
      rate = std::min(rate, dev.injection);
    }
    const Picoseconds alone = start + TimeAtRate(bytes, rate);
    const Picoseconds end = dev.hbm->Reserve(start, bytes, rate);
    if (send) dev.send_free = end;
    // Late only past what the chunk waits for anyway: its own arrival (or
    // availability) and its DMA alone.
    const Picoseconds due = Max(alone, in.tail);
    if (due < end) {
      out.head += end - due;
      out.tail += end - due;
    }
    return out;
  }

 private:
  static Picoseconds Max(Picoseconds a, Picoseconds b) { return a < b ? b : a; }
  net::VectorRateDataPath inner_;
  struct PerDevice {
    HbmArbiter* hbm = nullptr;
    double injection = 0;
    // SetWalkFloor; a device the walk never ran reserves nothing.
    Picoseconds walk_floor = Picoseconds(std::numeric_limits<int64_t>::max());
    Picoseconds send_free = Picoseconds(0);  // the send DMA is free
  };
  std::vector<PerDevice> devices_;
};

// What the timing walk needs of an executable; shared with the calls that
// wait to be timed, so the executable may go before they are.
struct SimSchedule {
  std::unique_ptr<runtime::Executable> host;
  CompiledProgram compiled;
  // Per kernel: the parameter indices it reads.
  std::vector<std::vector<int>> kernel_parameters;
  // ExternalCompiledProgram::xla_replicas_per_replica.
  int xla_replicas_per_replica = 1;

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
  // A program another compiler compiled (SimBackend::SetCompiler).
  SimExecutable(std::unique_ptr<runtime::Executable> host,
                ExternalCompiledProgram external) {
    auto s = std::make_shared<SimSchedule>();
    s->host = std::move(host);
    s->compiled = std::move(external.compiled);
    s->kernel_parameters = std::move(external.kernel_parameters);
    s->kernel_parameters.resize(s->compiled.kernels.size());
    s->xla_replicas_per_replica = external.xla_replicas_per_replica;
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
  options.trace_devices.assign(o.trace_devices().begin(),
                               o.trace_devices().end());
  if (o.has_trace_all_devices()) {
    options.trace_all_devices = o.trace_all_devices();
  }
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
  if (o.has_check_invariants()) options.check_invariants = o.check_invariants();
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
  const int n = layout.num_devices();
  std::vector<char> listed(n, 0);
  for (int d : options.trace_devices) {
    if (d < 0 || d >= n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.trace_devices (--trace-devices): device ", d,
          " is not a device of slice ", layout.name, "; allowed: 0..", n - 1,
          " (the device ids `tpusim topo` lists)"));
    }
    if (listed[d]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.trace_devices (--trace-devices): device ", d,
          " is listed twice; list each of 0..", n - 1, " at most once"));
    }
    listed[d] = 1;
  }
  if (options.max_auto_traced_devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_auto_traced_devices=", options.max_auto_traced_devices,
                     ": must be >= 1"));
  }
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
  TPUSIM_ASSIGN_OR_RETURN(net::NetConfig net_config,
                          NetConfigFromPreset(b->preset_));
  TPUSIM_ASSIGN_OR_RETURN(net::Topology net_topology,
                          net::Topology::Create(b->layout_, options.wrap));
  b->data_path_ = std::make_unique<HbmDataPath>(net_topology, net_config);
  TPUSIM_ASSIGN_OR_RETURN(b->pod_,
                          SimPod::Create(b->layout_, b->preset_, options.wrap,
                                         options.sim_threads,
                                         b->data_path_.get()));
  // The chips, each with its devices in core order.
  const net::Topology& topology = b->pod_->topology();
  std::vector<std::vector<int>> chip_devices(topology.num_chips());
  for (int d = 0; d < n; ++d) chip_devices[topology.chip_of_device(d)].push_back(d);
  b->chip_core_.resize(n);
  b->chips_.reserve(chip_devices.size());
  for (size_t chip = 0; chip < chip_devices.size(); ++chip) {
    for (size_t core = 0; core < chip_devices[chip].size(); ++core) {
      b->chip_core_[chip_devices[chip][core]] = {static_cast<int>(chip),
                                                 static_cast<int>(core)};
    }
    b->chips_.emplace_back(b->rates_, std::move(chip_devices[chip]),
                           host.pcie_bytes_per_second);
  }
  for (int d = 0; d < n; ++d) b->data_path_->set_hbm(d, &b->hbm(d));
  b->infeed_bytes_.assign(n, 0);
  b->pod_->set_check_bounds(options.check_invariants);
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
  // The devices traced from the start (see SimBackendOptions): all of a pod
  // of at most max_auto_traced_devices; else device 0 and the listed ones
  // (CreateWithPreset has checked them).
  const int n = layout_.num_devices();
  const bool all =
      options_.trace_all_devices || n <= options_.max_auto_traced_devices;
  traced_.assign(n, all ? 1 : 0);
  if (!all) {
    traced_[0] = 1;
    for (int d : options_.trace_devices) traced_[d] = 1;
  }
  num_traced_ = static_cast<int>(std::count(traced_.begin(), traced_.end(), 1));
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
  if (compiler_) {
    absl::StatusOr<ExternalCompiledProgram> external =
        compiler_(host->program(), layout_);
    if (!external.ok()) {
      return absl::Status(
          external.status().code(),
          absl::StrCat("compiler ", compiler_name_, ": ",
                       external.status().message()));
    }
    return std::unique_ptr<runtime::Executable>(
        new SimExecutable(std::move(host), *std::move(external)));
  }
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
        using common::HumanBytes;
        return absl::ResourceExhaustedError(absl::StrCat(
            "program ", program.name(), " does not fit in HBM of device ", d,
            " (task ", dd.task, ", TPU:", dd.ordinal, ", coords (",
            absl::StrJoin(dd.coords, ","), ")): needs ", HumanBytes(need),
            " (variables ", HumanBytes(variables), ", parameters ",
            HumanBytes(m.parameters), ", infeed buffers ", HumanBytes(m.infeed),
            ", constants ", HumanBytes(m.constants), ", peak live values ",
            HumanBytes(m.live_peak), "), capacity ", HumanBytes(capacity),
            "; largest live values: ", absl::StrJoin(m.largest_at_peak, "; ")));
      }
      DeviceCounters& counted = counters(d);
      if (need >= counted.peak_hbm_bytes) {
        counted.peak_hbm_bytes = need;
        counted.peak_hbm_split = {variables - m.optimizer_state,
                                  m.optimizer_state,
                                  m.parameters,
                                  m.infeed,
                                  m.constants,
                                  m.live_peak};
      }
    }
  }
  // This process's memory, on the program's first call, before its values
  // are computed and timed.
  if (std::find(memory_checked_.begin(), memory_checked_.end(),
                exe->schedule().get()) == memory_checked_.end()) {
    bool real = false;
    for (const std::vector<runtime::Buffer*>& args : iterations[0]) {
      for (const runtime::Buffer* b : args) real = real || b->has_data();
    }
    TPUSIM_ASSIGN_OR_RETURN(MemoryEstimate estimate,
                            EstimateMemory(executable, real));
    memory_estimate_bytes_ =
        std::max(memory_estimate_bytes_, estimate.total_bytes);
    TPUSIM_RETURN_IF_ERROR(
        CheckMemoryLimit(estimate, options_.memory_limit_bytes));
    memory_checked_.push_back(exe->schedule().get());
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

absl::StatusOr<MemoryEstimate> SimBackend::EstimateMemory(
    const runtime::Executable& executable, bool real_values) const {
  const auto* exe = dynamic_cast<const SimExecutable*>(&executable);
  if (exe == nullptr) {
    return absl::InvalidArgumentError(
        "SimBackend: the executable was not compiled by this backend");
  }
  const runtime::Program& program = exe->program();
  const CompiledProgram& compiled = exe->compiled();
  RunShape shape;
  shape.devices = layout_.num_devices();
  shape.chips = layout_.num_chips;
  shape.replicas = program.num_replicas();
  shape.ops = static_cast<int64_t>(program.ops().size());
  shape.kernels = static_cast<int64_t>(compiled.kernels.size());
  shape.variable_slots = static_cast<int64_t>(program.variables().size());
  shape.real_values = real_values;
  for (const CoreMemory& m : compiled.memory) {
    shape.replica_value_bytes += m.live_peak + m.parameters;
    shape.device_variable_bytes =
        std::max(shape.device_variable_bytes, m.variables + m.optimizer_state);
  }
  // Values made of constants only (HostBackend computes them once).
  const std::vector<runtime::Op>& ops = program.ops();
  std::vector<char> invariant(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    const runtime::Op& op = ops[i];
    bool inv = runtime::DependsOnOperandsOnly(op.code);
    for (int o : op.operands) inv = inv && invariant[o];
    invariant[i] = inv;
    if (inv) {
      shape.invariant_value_bytes +=
          op.type.shape.num_elements() * runtime::DTypeSize(op.type.dtype);
    }
  }
  shape.record_spans = options_.record_spans;
  shape.traced_devices =
      options_.trace_all_devices
          ? shape.devices
          : std::min<int64_t>(shape.devices,
                              std::max<int64_t>(num_traced_,
                                                options_.max_auto_traced_devices));
  shape.traced_steps =
      options_.expected_steps > 0
          ? std::min(options_.expected_steps, options_.max_traced_steps)
          : options_.max_traced_steps;
  shape.steps = options_.expected_steps;
  return EstimateRunMemory(shape);
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
    if (st.ok() && options_.check_invariants) st = CheckInvariants();
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

absl::Status SimBackend::Simulate(const PendingCall& call_info) const {
  const SimSchedule& exe = *call_info.exe;
  // An imported module that every device of a replica runs (its XLA
  // replica r * C + c): timed as R * C replicas of one core.
  runtime::SpmdAssignment flat;
  const bool flatten = exe.xla_replicas_per_replica > 1;
  if (flatten) {
    for (const std::vector<int>& devs : call_info.assignment.replica_devices) {
      for (int d : devs) flat.replica_devices.push_back({d});
    }
  }
  const runtime::SpmdAssignment& assignment =
      flatten ? flat : call_info.assignment;
  const runtime::Program& program = exe.program();
  const CompiledProgram& compiled = exe.compiled;
  const std::vector<Kernel>& kernels = compiled.kernels;
  const int num_devices = layout_.num_devices();
  const std::vector<runtime::Op>& ops = program.ops();
  const int replicas = assignment.num_replicas();
  const int cores = flatten ? 1 : program.num_cores_per_replica();
  const Picoseconds call = now_;
  const Picoseconds begin = call + options_.host_loop_overhead;
  auto dev = [&](int r, int c) { return assignment.replica_devices[r][c]; };
  // Per (replica, core) slot: its device's core timeline, on the device's
  // chip (sim/chip/chip.h: the clock and what it waited for), reset for the
  // call; per (kernel, replica): when the kernel finished.
  const size_t slots = static_cast<size_t>(replicas) * cores;
  std::vector<CoreTimeline*> tl(slots);
  // The (replica, core) slot of each device of the assignment.
  std::vector<int> slot_of(num_devices, -1);
  std::vector<int> device_of_slot(slots);
  for (int r = 0; r < replicas; ++r) {
    for (int c = 0; c < cores; ++c) {
      const int d = dev(r, c);
      slot_of[d] = r * cores + c;
      device_of_slot[r * cores + c] = d;
      tl[r * cores + c] =
          &chips_[chip_core_[d].first].timeline(chip_core_[d].second);
      tl[r * cores + c]->Reset(begin);
    }
  }
  step_spans_.clear();
  step_flights_.clear();
  // The call's host spans are kept while its first step's spans are.
  const bool traced_call = traced_steps_ < options_.max_traced_steps;
  // Each slot's timeline for the critical path (sim/critical_path.h): a
  // point (its span time so far) at the call's start, at each collective it
  // starts (its arrival), around each wait on one, and at its end.
  PathTimeline path;
  path.points.resize(slots);
  path.waits.resize(slots);
  auto mark = [&](size_t slot, Picoseconds t) {
    path.points[slot].push_back(
        PathPoint{t.count(), counters(device_of_slot[slot]).category_ps});
    return static_cast<int>(path.points[slot].size()) - 1;
  };
  for (size_t slot = 0; slot < slots; ++slot) mark(slot, call);
  for (int r = 0; r < replicas; ++r) {
    for (int c = 0; c < cores; ++c) {
      AddStepSpan(dev(r, c), kNameHostLoop, call, begin, "host");
    }
  }
  std::vector<Picoseconds> finished(kernels.size() * replicas, Picoseconds(0));
  // The network collective of each start kernel (-1: none pending).
  std::vector<int> collective_of(kernels.size(), -1);
  pod_->ClearCollectives();

  // The device waits for its batch when a kernel first reads an argument.
  std::map<int, int64_t> untaken;  // device -> its batch of this iteration
  auto take = [&](int d, Picoseconds ready,
                  bool wait) -> absl::StatusOr<Picoseconds> {
    auto it = untaken.find(d);
    if (it == untaken.end()) return ready;
    TPUSIM_ASSIGN_OR_RETURN(Taken t, hosts_->Take(d, it->second, ready));
    untaken.erase(it);
    // Its HBM writes went at the PCIe rate, in the share each device's HBM
    // keeps for the infeed (sim/chip/chip.h): it is usable at its arrival.
    infeed_bytes_[d] += static_cast<double>(t.batch.bytes);
    if (!wait) return ready;
    const size_t slot = slot_of[d];
    tl[slot]->input += t.input_wait;
    tl[slot]->infeed += t.infeed_wait;
    const Picoseconds input_end = ready + t.input_wait;
    if (t.input_wait.count() > 0) {
      AddStepSpan(d, kNameInputPipeline, ready, input_end, "input");
    }
    if (t.infeed_wait.count() > 0) {
      AddStepSpan(d, kNameInfeed, input_end, t.start, "infeed");
    }
    return t.start;
  };

  // The walk's state (see below): per core its kernels in program order; per
  // slot its next one; per (kernel, replica) whether it is timed and the
  // slots waiting for it.
  std::vector<std::vector<int>> core_kernels(cores);
  // Per core: the cores it sends copies to.
  std::vector<std::vector<int>> copy_targets(cores);
  for (size_t k = 0; k < kernels.size(); ++k) {
    core_kernels[kernels[k].core].push_back(static_cast<int>(k));
    if (kernels[k].kind == CompiledKernelKind::kCopy) {
      std::vector<int>& to = copy_targets[kernels[k].copy_from_core];
      if (std::find(to.begin(), to.end(), kernels[k].core) == to.end()) {
        to.push_back(kernels[k].core);
      }
    }
  }

  std::vector<char> timed(kernels.size() * replicas, 0);
  // The slots waiting for a (kernel, replica): a list through `waiters`
  // (slot, next; -1 ends it), its head per (kernel, replica) (4 bytes each).
  std::vector<int32_t> waiting_head(kernels.size() * replicas, -1);
  std::vector<std::pair<int32_t, int32_t>> waiters;
  const size_t num_iterations = call_info.batches.size();
  for (size_t iteration = 0; iteration < num_iterations; ++iteration) {
    for (const auto& [d, index] : call_info.batches[iteration]) {
      untaken[d] = index;
    }
    // The call's collectives, in program order (their ids order the starts
    // due at one time).
    for (size_t k = 0; k < kernels.size(); ++k) {
      if (kernels[k].kind == CompiledKernelKind::kCopy) {
        // A value from another logical core: a point-to-point transfer on
        // the network (the links, or the on-chip path between the cores of
        // a v2/v3 chip), one pair per replica, matched by its channel.
        const Kernel& kernel = kernels[k];
        const int c = kernel.core;
        const int from = kernel.copy_from_core;
        SimPod::Collective col;
        std::vector<std::pair<int, int>> pairs;
        for (int r = 0; r < replicas; ++r) {
          pairs.push_back({dev(r, from), dev(r, c)});
        }
        col.request.op = net::CollectiveOp::kCollectivePermute;
        col.request.algorithm = net::Algorithm::kAuto;
        TPUSIM_ASSIGN_OR_RETURN(
            col.request.pairs,
            net::PermutePairs::Create(pod_->topology(), std::move(pairs)));
        col.request.bytes = kernel.copy_bytes;
        col.request.channel = pod_->NewChannel();
        col.trivial = kernel.copy_bytes <= 0;  // nothing to move
        for (int r = 0; r < replicas; ++r) {
          col.devices.push_back(dev(r, c));
          col.slots.push_back(r * cores + c);
        }
        for (int r = 0; r < replicas; ++r) {
          col.devices.push_back(dev(r, from));
          col.slots.push_back(-1);  // the sender does not wait for it
        }
        col.name = kernel.name;
        collective_of[k] = pod_->AddCollective(std::move(col));
        // No wait on a copy jumps (its transfer starts at its receiver's
        // ready): no members for the path.
        path.collectives.resize(collective_of[k] + 1);
        continue;
      }
      if (kernels[k].kind != CompiledKernelKind::kCollectiveStart) continue;
      const Kernel& kernel = kernels[k];
      const int c = kernel.core;
      // sim/compile's kernels name their op; an external compiler's carry
      // the collective's op, groups and bytes themselves.
      runtime::Op imported;
      if (kernel.op_ids.empty()) {
        imported.code = kernel.collective;
        imported.attrs.replica_groups = kernel.replica_groups;
        imported.attrs.source_target_pairs = kernel.source_target_pairs;
      }
      const runtime::Op& op =
          kernel.op_ids.empty() ? imported : ops[kernel.op_ids.back()];
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
      for (int r = 0; r < replicas; ++r) {
        col.devices.push_back(dev(r, c));
        col.slots.push_back(r * cores + c);
      }
      // Its members find each other's messages by its channel, not by how
      // many collectives each has started: the devices of different logical
      // cores start different collectives (and copies), so a later program
      // whose groups mix them would otherwise pair the wrong ones.
      col.request.channel = pod_->NewChannel();
      col.name = kernel.name;
      // The path's view of its members: whom each one's part depends on.
      std::vector<PathMember> members(replicas);
      std::vector<int> source(replicas, -1);
      if (op.code == OpCode::kCollectivePermute) {
        for (const auto& [from, to] : op.attrs.source_target_pairs) {
          source[static_cast<size_t>(to)] = static_cast<int>(from);
        }
      }
      for (int r = 0; r < replicas; ++r) {
        members[r].timeline = r * cores + c;
        members[r].device = dev(r, c);
        members[r].group = col.request.groups != nullptr
                               ? col.request.groups->group_of(dev(r, c))
                               : -1;
        members[r].source = source[r];
      }
      const int id = pod_->AddCollective(std::move(col));
      collective_of[k] = id;
      path.collectives.resize(id + 1);
      path.collectives[id] = std::move(members);
    }
    // The walk (no collective starts behind the network's clock, by
    // construction): each (replica, core) slot runs its core's kernels in
    // program order until it finishes, or blocks on a kernel of another
    // slot (a dependency not yet timed) or on a collective the network has
    // not ended for it. The network runs only when every slot is finished or
    // blocked, and only until the first end that a blocked slot waits for:
    // every start the walk hands it later is at or after its clock.
    for (CoreTimeline* t : tl) t->cursor = 0;
    std::fill(timed.begin(), timed.end(), 0);
    std::fill(waiting_head.begin(), waiting_head.end(), -1);
    waiters.clear();
    std::deque<int> runnable;
    for (size_t slot = 0; slot < slots; ++slot) {
      runnable.push_back(static_cast<int>(slot));
    }
    size_t finished_slots = 0;
    // The algorithm a collective's first group runs (the trace's and the
    // report's collective table), resolved once per collective.
    std::unordered_map<int, const char*> algorithms;
    auto algorithm_of = [&](int id, int c) -> const char* {
      auto [it, inserted] = algorithms.try_emplace(id, "none");
      if (!inserted) return it->second;
      const SimPod::Collective& col = pod_->collective(id);
      if (!col.trivial) {
        const int group = col.request.groups != nullptr
                              ? col.request.groups->group_of(dev(0, c))
                              : 0;
        absl::StatusOr<net::Algorithm> a =
            net::ResolveAlgorithm(pod_->topology(), col.request, group);
        it->second = a.ok() ? net::AlgorithmName(*a) : "unknown";
      }
      return it->second;
    };
    // Runs slot `slot` until it finishes or blocks.
    auto advance = [&](int slot) -> absl::Status {
      tl[slot]->waits_on_network = false;
      const int r = slot / cores;
      const int c = slot % cores;
      const int d = dev(r, c);
      const std::vector<int>& mine = core_kernels[c];
      while (tl[slot]->cursor < mine.size()) {
        const int k = mine[tl[slot]->cursor];
        const Kernel& kernel = kernels[k];
        const bool is_done = kernel.kind == CompiledKernelKind::kCollectiveDone;
        Picoseconds ready = tl[slot]->clock;
        for (int dep : kernel.deps) {
          if (is_done && dep == kernel.pair) continue;
          if (!timed[dep * replicas + r]) {
            int32_t& head = waiting_head[dep * replicas + r];
            waiters.push_back({slot, head});
            head = static_cast<int32_t>(waiters.size() - 1);
            return absl::OkStatus();
          }
          ready = Max(ready, finished[dep * replicas + r]);
        }
        if (kernel.kind == CompiledKernelKind::kCollectiveStart) {
          const int id = collective_of[k];
          Picoseconds at = ready;
          // A collective of an argument waits for the device's batch.
          if (!exe.kernel_parameters[k].empty()) {
            TPUSIM_ASSIGN_OR_RETURN(at, take(d, at, /*wait=*/true));
            tl[slot]->clock = Max(tl[slot]->clock, at);
          }
          // A start is issued and returns at once.
          path.collectives[id][r].arrival = mark(slot, at);
          finished[k * replicas + r] = at;
          pod_->Schedule(id, r, at);
          ++stats_.collectives;
        } else if (is_done) {
          const int id = collective_of[kernel.pair];
          SimPod::Collective& col = pod_->collective(id);
          if (col.end[r] < Picoseconds(0)) {
            pod_->Wait(id, r);
            tl[slot]->waits_on_network = true;
            return absl::OkStatus();
          }
          const Picoseconds end = col.end[r];
          tl[slot]->collective += end - col.start[r];
          if (ready < end) {
            tl[slot]->exposed += end - ready;
            const int p0 = mark(slot, ready);
            AddStepSpan(d, static_cast<int32_t>(k), ready, end, "collective");
            path.waits[slot].push_back(PathWait{id, r, p0, mark(slot, end)});
          }
          if (options_.record_spans &&
              traced_steps_ < options_.max_traced_steps) {
            step_flights_.push_back(StepFlight{
                d, static_cast<int32_t>(k), col.start[r].count(), end.count(),
                ready < end ? (end - ready).count() : int64_t{0},
                algorithm_of(id, c)});
          }
          const Picoseconds done = Max(ready, end);
          tl[slot]->clock = done;
          finished[k * replicas + r] = done;
        } else if (kernel.kind == CompiledKernelKind::kCopy) {
          // A value from another logical core: the transfer starts on both
          // devices when the value is ready here (the copy's ready) and
          // travels the network with everything else (contention, link
          // counters; its HBM read and write on the devices' HBM, as
          // collective chunks do); this slot waits for it to arrive.
          const int id = collective_of[k];
          SimPod::Collective& col = pod_->collective(id);
          if (col.start[r] < Picoseconds(0)) {
            if (!exe.kernel_parameters[k].empty()) {
              TPUSIM_ASSIGN_OR_RETURN(ready, take(d, ready, /*wait=*/true));
            }
            pod_->Schedule(id, r, ready);             // the receiver
            pod_->Schedule(id, replicas + r, ready);  // the sender
          }
          if (col.end[r] < Picoseconds(0)) {
            pod_->Wait(id, r);
            tl[slot]->waits_on_network = true;
            return absl::OkStatus();
          }
          AddStepSpan(d, static_cast<int32_t>(k), col.start[r], col.end[r],
                      "collective");
          tl[slot]->clock = col.end[r];
          finished[k * replicas + r] = col.end[r];
        } else {
          // Its arguments must be on the device: the first kernel that reads
          // one waits for the device's batch.
          if (!exe.kernel_parameters[k].empty()) {
            TPUSIM_ASSIGN_OR_RETURN(ready, take(d, ready, /*wait=*/true));
          }
          // The device's chip times it: HBM shared with the DMA reserved on
          // the device (collective and infeed; sim/chip/chip.h).
          const auto [chip, core] = chip_core_[d];
          const KernelTime t = chips_[chip].RunKernel(core, kernel.work, ready);
          ++stats_.kernels;
          const Picoseconds end = ready + t.total;
          AddStepSpan(d, static_cast<int32_t>(k), ready, end, t.category);
          tl[slot]->clock = end;
          finished[k * replicas + r] = end;
        }
        timed[k * replicas + r] = 1;
        // In the order they came (the list is newest first).
        int32_t& head = waiting_head[k * replicas + r];
        const size_t first = runnable.size();
        for (int32_t w = head; w >= 0; w = waiters[w].second) {
          runnable.push_back(waiters[w].first);
        }
        std::reverse(runnable.begin() + static_cast<std::ptrdiff_t>(first),
                     runnable.end());
        head = -1;
        ++tl[slot]->cursor;
      }
      ++finished_slots;
      return absl::OkStatus();
    };
    while (finished_slots < slots) {
      while (!runnable.empty()) {
        const int slot = runnable.front();
        runnable.pop_front();
        TPUSIM_RETURN_IF_ERROR(advance(slot));
        // No later reservation on the device starts before its clock (its
        // kernels), its endpoint's floor (the chunks of its collectives,
        // started or scheduled: no start is behind the network's clock) or
        // the clock of a core it sends copies to (a copy's read starts at
        // the receiver's ready): the timeline before that is forgotten.
        // While the network runs, the device's HBM is forgotten behind its
        // endpoint's floor and what the walk may still start there
        // (SetWalkFloor).
        const int d = device_of_slot[slot];
        Picoseconds walk = tl[slot]->waits_on_network
                               ? Picoseconds(std::numeric_limits<int64_t>::max())
                               : tl[slot]->clock;
        const int base = slot - slot % cores;
        for (int to : copy_targets[slot % cores]) {
          walk = std::min(walk, tl[base + to]->clock);
        }
        hbm(d).Forget(std::min({tl[slot]->clock, walk,
                                pod_->network().endpoint(d).Floor()}));
        data_path_->SetWalkFloor(d, walk);
      }
      if (finished_slots == slots) break;
      // Every slot is finished or blocked: the network runs until an end
      // that a blocked slot waits for.
      using Ended = std::vector<std::pair<int, int>>;
      TPUSIM_ASSIGN_OR_RETURN(Ended woken, pod_->RunUntilWaitedEnd());
      for (const auto& [id, member] : woken) {
        runnable.push_back(pod_->collective(id).slots[member]);
      }
    }
    // A batch no kernel read is dequeued when the device ends the iteration
    // (it waits for nothing).
    while (!untaken.empty()) {
      const int d = untaken.begin()->first;
      const int slot = slot_of[d];
      TPUSIM_RETURN_IF_ERROR(
          take(d, slot >= 0 ? tl[slot]->clock : call, /*wait=*/false)
              .status());
    }
    // Collectives nobody waited for still end within the iteration: a TPU
    // while loop carries its state into the next one.
    for (size_t k = 0; k < kernels.size(); ++k) {
      if (kernels[k].kind != CompiledKernelKind::kCollectiveStart &&
          kernels[k].kind != CompiledKernelKind::kCopy) {
        continue;
      }
      const int id = collective_of[k];
      if (id < 0) continue;
      TPUSIM_RETURN_IF_ERROR(pod_->Resolve(id));
      SimPod::Collective& col = pod_->collective(id);
      for (int r = 0; r < replicas; ++r) {
        const size_t slot = r * cores + kernels[k].core;
        tl[slot]->clock = Max(tl[slot]->clock, col.end[r]);
      }
    }
    if (options_.record_spans) {  // EndStep does nothing without
      std::vector<Picoseconds> clocks(slots);
      for (size_t slot = 0; slot < slots; ++slot) {
        clocks[slot] = tl[slot]->clock;
      }
      EndStep(exe, clocks, device_of_slot);
    }
  }
  // The call ends when every device has finished.
  Picoseconds end = begin;
  size_t last = 0;
  for (size_t k = 0; k < slots; ++k) {
    if (end < tl[k]->clock) {
      end = tl[k]->clock;
      last = k;
    }
  }
  Step step;
  step.start_ps = call.count();
  step.end_ps = end.count();
  step.steps = static_cast<int64_t>(num_iterations);
  step.exposed_collective_ps = tl[last]->exposed.count();
  step.hidden_collective_ps = std::max<int64_t>(
      0, (tl[last]->collective - tl[last]->exposed).count());
  step.infeed_wait_ps = tl[last]->infeed.count();
  step.input_wait_ps = tl[last]->input.count();
  step.host_overhead_ps = options_.host_loop_overhead.count();
  for (size_t slot = 0; slot < slots; ++slot) mark(slot, tl[slot]->clock);
  step.critical_path_ps = WalkCriticalPath(path, static_cast<int>(last));
  steps_.push_back(step);
  // Each link's busy time so far, at the end of the first calls: the trace's
  // link utilisation over time.
  if (options_.record_spans && pod_ != nullptr &&
      steps_.size() <= static_cast<size_t>(kMaxLinkSamples)) {
    const std::vector<net::LinkStats> links = pod_->network().Links();
    std::vector<int64_t> busy(links.size());
    for (size_t i = 0; i < links.size(); ++i) {
      busy[i] = links[i].busy.count() -
                (i < link_base_.size() ? link_base_[i].second : 0);
    }
    link_samples_.push_back(std::move(busy));
  }
  now_ = end;
  // Host spans: each batch's pipeline work and its PCIe transfer (while
  // steps are traced).
  if (options_.record_spans) {
    // History() pairs a host with a batch (whose device id is global).
    for (const auto& [host, b] : hosts_->History()) {
      const int device = b.device;
      if (!traced_[device] || !traced_call) continue;
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

absl::Status SimBackend::CheckInvariants() const {
  const net::Topology& topo = pod_->topology();
  const net::NetConfig& config = pod_->config();
  Picoseconds elapsed = std::max(now_, pod_->Now());
  for (int d = 0; d < layout_.num_devices(); ++d) {
    elapsed = std::max(elapsed, hbm(d).last_end());
  }
  const double seconds = static_cast<double>(elapsed.count()) * 1e-12;
  // Floating-point slack of a rate comparison.
  constexpr double kSlack = 1e-9;
  auto fail = [](auto&&... parts) {
    return absl::FailedPreconditionError(
        absl::StrCat("pod invariant: ", parts...));
  };
  auto link_name = [&](const net::LinkStats& l) {
    if (l.dir >= net::kNumDirections) {
      return absl::StrCat("on-chip path of chip ", l.chip, " (core ",
                          l.dir - net::kNumDirections, " to core ",
                          1 - (l.dir - net::kNumDirections), ")");
    }
    return absl::StrCat("link of chip ", l.chip, " (coords ",
                        absl::StrJoin(topo.coords(l.chip), ","), ") dim ",
                        net::DirectionDim(l.dir),
                        net::DirectionIsPositive(l.dir) ? "+" : "-");
  };
  std::vector<double> injected(topo.num_chips(), 0);
  for (const net::LinkStats& l : pod_->network().Links()) {
    if (elapsed < l.busy) {
      return fail(link_name(l), ": busy ", l.busy.count(), " ps > elapsed ",
                  elapsed.count(), " ps, by ", (l.busy - elapsed).count(),
                  " ps");
    }
    if (l.dir < net::kNumDirections) injected[l.chip] += static_cast<double>(l.bytes);
  }
  for (int chip = 0; chip < topo.num_chips(); ++chip) {
    const double bound =
        topo.NumLinks(chip) * config.link_bytes_per_second * seconds;
    if (injected[chip] > bound * (1 + kSlack) + 1) {
      return fail("chip ", chip, " (coords ",
                  absl::StrJoin(topo.coords(chip), ","), "): sent ",
                  injected[chip], " bytes over its ", topo.NumLinks(chip),
                  " ICI links, above links x B x elapsed = ", bound,
                  " bytes, by ", injected[chip] - bound, " bytes");
    }
  }
  for (int d = 0; d < layout_.num_devices(); ++d) {
    const HbmArbiter& h = hbm(d);
    const double rate = h.bytes_per_second();
    if (h.violations().count > 0) {
      return fail("device ", d, " HBM: ", h.violations().count,
                  " reservation(s) before the forgotten horizon, the first at ",
                  h.violations().start.count(), " ps, before ",
                  h.violations().horizon.count(), " ps by ",
                  (h.violations().horizon - h.violations().start).count(),
                  " ps");
    }
    if (h.PeakUse() > rate * (1 + kSlack)) {
      return fail("device ", d, " HBM: ", h.PeakUse(),
                  " bytes/s in use at once by kernels and collectives, above "
                  "their rate ", rate, " bytes/s (the device's less the "
                  "infeed's share) by ", h.PeakUse() - rate, " bytes/s");
    }
    // All of it: the timeline's and the infeed's, at the device's rate.
    const double moved = h.bytes() + infeed_bytes_[d];
    const double full = rates_.hbm_bytes_per_second * seconds;
    if (moved > full * (1 + kSlack) + 1) {
      return fail("device ", d, " HBM: moved ", moved,
                  " bytes, above rate x elapsed = ", full, " bytes, by ",
                  moved - full, " bytes");
    }
  }
  for (const ChipModel& chip : chips_) {
    if (chip.roofline_violations() > 0) {
      return fail("device ", chip.device(0), "'s chip: ",
                  chip.roofline_violations(),
                  " kernel(s) took less than their roofline");
    }
  }
  return absl::OkStatus();
}

void SimBackend::AddStepSpan(int device, int32_t name, Picoseconds start,
                             Picoseconds end, const char* category) const {
  const int c = SpanCategoryIndex(category);
  counters(device).category_ps[c] += (end - start).count();
  if (options_.record_spans && traced_steps_ < options_.max_traced_steps) {
    step_spans_.push_back({start.count(), end.count(), device, name,
                           static_cast<uint32_t>(c)});
  }
}

void SimBackend::EndStep(const SimSchedule& schedule,
                         absl::Span<const Picoseconds> clock,
                         absl::Span<const int> device_of_slot) const {
  if (!options_.record_spans) return;
  if (traced_steps_ >= options_.max_traced_steps) {
    ++untraced_steps_;
    step_flights_.clear();
    return;
  }
  ++traced_steps_;
  const int cap = options_.max_auto_traced_devices;
  if (num_traced_ < cap && !device_of_slot.empty()) {
    // The step's critical-path device, then its slowest and fastest by
    // kernel time (kSpanCategories 0..2: mxu, vector, memory); the lowest
    // device id among equals.
    std::vector<int64_t> busy(layout_.num_devices(), 0);
    for (const StepSpan& s : step_spans_) {
      if (s.category < 3) busy[s.device] += s.end_ps - s.start_ps;
    }
    size_t critical = 0;
    int slowest = device_of_slot[0], fastest = device_of_slot[0];
    for (size_t slot = 1; slot < device_of_slot.size(); ++slot) {
      const int d = device_of_slot[slot];
      const int c = device_of_slot[critical];
      if (clock[critical] < clock[slot] ||
          (clock[slot] == clock[critical] && d < c)) {
        critical = slot;
      }
      if (busy[d] > busy[slowest] || (busy[d] == busy[slowest] && d < slowest)) {
        slowest = d;
      }
      if (busy[d] < busy[fastest] || (busy[d] == busy[fastest] && d < fastest)) {
        fastest = d;
      }
    }
    for (int d : {device_of_slot[critical], slowest, fastest}) {
      if (num_traced_ < cap && !traced_[d]) {
        traced_[d] = 1;
        ++num_traced_;
      }
    }
  }
  const std::vector<Kernel>& kernels = schedule.compiled.kernels;
  for (const StepSpan& s : step_spans_) {
    if (!traced_[s.device]) continue;
    const char* name = s.name == kNameHostLoop        ? "host loop"
                       : s.name == kNameInputPipeline ? "input pipeline"
                       : s.name == kNameInfeed        ? "infeed"
                                                      : nullptr;
    Span span{s.device,
              name != nullptr ? std::string(name) : kernels[s.name].name,
              s.start_ps, s.end_ps, kSpanCategories[s.category]};
    if (name == nullptr) {
      const Kernel& k = kernels[s.name];
      span.flops = k.flops;
      span.bytes = k.kind == CompiledKernelKind::kCollectiveDone
                       ? k.collective_bytes
                   : k.kind == CompiledKernelKind::kCopy
                       ? k.copy_bytes
                       : k.hbm_read_bytes + k.hbm_write_bytes;
      span.fused_ops = static_cast<int32_t>(k.op_ids.size());
    }
    spans_.push_back(std::move(span));
  }
  step_spans_.clear();
  for (const StepFlight& f : step_flights_) {
    if (!traced_[f.device]) continue;
    const Kernel& k = kernels[f.kernel];
    std::string pair(absl::StripSuffix(k.name, ".done"));
    flights_.push_back(Flight{f.device, std::move(pair),
                              std::string(runtime::OpCodeName(k.collective)),
                              f.algorithm, k.collective_bytes, f.start_ps,
                              f.end_ps, f.exposed_ps});
  }
  step_flights_.clear();
}

Picoseconds SimBackend::Now() const {
  (void)Settle(/*all=*/true);  // an error is CollectProfile's to return
  return now_;
}

absl::StatusOr<runtime::Profile> SimBackend::CollectProfile() const {
  TPUSIM_RETURN_IF_ERROR(Settle(/*all=*/true));
  TPUSIM_ASSIGN_OR_RETURN(runtime::Profile p, host_->CollectProfile());
  p.set_backend("sim");
  for (int d = 0; d < p.devices_size() && d < static_cast<int>(chip_core_.size());
       ++d) {
    runtime::DeviceProfile& dp = *p.mutable_devices(d);
    const DeviceCounters& t = counters(d);
    dp.set_mxu_busy_ps(t.mxu_busy_ps);
    dp.set_busy_ps(t.busy_ps);
    dp.set_hbm_bytes(t.hbm_bytes);
    dp.set_peak_hbm_bytes(t.peak_hbm_bytes);
    if (t.peak_hbm_bytes > 0) {
      runtime::HbmSplit* split = dp.mutable_peak_hbm_split();
      split->set_weights(t.peak_hbm_split.weights);
      split->set_optimizer_state(t.peak_hbm_split.optimizer_state);
      split->set_arguments(t.peak_hbm_split.arguments);
      split->set_infeed(t.peak_hbm_split.infeed);
      split->set_constants(t.peak_hbm_split.constants);
      split->set_live_peak(t.peak_hbm_split.live_peak);
    }
    dp.set_hbm_capacity_bytes(rates_.hbm_capacity.count());
    for (int c = 0; c < kNumSpanCategories; ++c) {
      if (t.category_ps[c] != 0) {
        (*dp.mutable_category_ps())[kSpanCategories[c]] = t.category_ps[c];
      }
    }
  }
  for (int d = 0; d < static_cast<int>(traced_.size()); ++d) {
    if (traced_[d]) p.add_traced_devices(d);
  }
  p.set_untraced_steps(untraced_steps_);
  for (const Span& s : spans_) {
    runtime::TimelineSpan* span = p.add_spans();
    span->set_device_id(s.device_id);
    span->set_name(s.name);
    span->set_start_ps(s.start_ps);
    span->set_end_ps(s.end_ps);
    span->set_category(s.category);
    span->set_host(s.host);
    span->set_flops(s.flops);
    span->set_bytes(s.bytes);
    span->set_fused_ops(s.fused_ops);
  }
  for (const Flight& f : flights_) {
    runtime::CollectiveSpan* c = p.add_collectives();
    c->set_device_id(f.device_id);
    c->set_name(f.name);
    c->set_op(f.op);
    c->set_algorithm(f.algorithm);
    c->set_bytes(f.bytes);
    c->set_start_ps(f.start_ps);
    c->set_end_ps(f.end_ps);
    c->set_exposed_ps(f.exposed_ps);
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
    auto& path = *step->mutable_critical_path_ps();
    for (int c = 0; c < kNumSpanCategories; ++c) {
      path[kSpanCategories[c]] = s.critical_path_ps[c];
    }
    path["idle"] = s.critical_path_ps[kCriticalIdle];
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
    for (const std::vector<int64_t>& sample : link_samples_) {
      if (index < sample.size()) lp->add_busy_ps_at_step_end(sample[index]);
    }
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
  for (ChipModel& chip : chips_) chip.ResetCounters();
  spans_.clear();
  step_spans_.clear();
  flights_.clear();
  step_flights_.clear();
  link_samples_.clear();
  traced_steps_ = 0;
  untraced_steps_ = 0;
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
