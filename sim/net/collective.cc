#include "sim/net/collective.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/check.h"
#include "common/status_macros.h"

namespace tpusim::sim::net {

using common::Picoseconds;

namespace {

constexpr int kCoreAxis = Topology::kCoreAxis;

int64_t ChunkBytes(int64_t total, int n, int index) {
  return total / n + (index < total % n ? 1 : 0);
}

Picoseconds Max(Picoseconds a, Picoseconds b) { return a < b ? b : a; }

int64_t CeilPs(double bytes, double ps_per_byte) {
  return static_cast<int64_t>(std::ceil(bytes * ps_per_byte));
}

std::string GroupText(const std::vector<int>& group) {
  if (group.size() <= 8)
    return absl::StrCat("{", absl::StrJoin(group, ","), "}");
  return absl::StrCat("{", group[0], ",", group[1], ",...} (", group.size(),
                      " devices)");
}

int AxisCoord(const Topology& t, int device, int axis) {
  return t.DeviceCoord(device, axis);
}

int AxisLength(const Topology& t, int axis) { return t.AxisLength(axis); }

// The device whose coordinate on `axis` is `value`, the others as `device`'s.
int DeviceWithAxis(const Topology& t, int device, int axis, int value) {
  const int chip = t.chip_of_device(device);
  if (axis == kCoreAxis) return t.device_at(chip, value);
  std::array<int, 3> c = t.coords(chip);
  c[axis] = value;
  return t.device_at(t.chip_at(c), t.core_of_device(device));
}

}  // namespace

const char* CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllToAll:
      return "all_to_all";
    case CollectiveOp::kCollectivePermute:
      return "permute";
  }
  return "?";
}

absl::StatusOr<CollectiveOp> ParseCollectiveOp(absl::string_view text) {
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                          CollectiveOp::kReduceScatter, CollectiveOp::kAllToAll,
                          CollectiveOp::kCollectivePermute}) {
    if (text == CollectiveOpName(op)) return op;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("collective op \"", text,
                   "\" is not allowed; expected all_reduce, all_gather, "
                   "reduce_scatter, all_to_all or permute"));
}

const char* AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kBidirRing:
      return "bidir_ring";
    case Algorithm::kTorus:
      return "torus";
    case Algorithm::kMultiAxis:
      return "multi_axis";
    case Algorithm::kDirect:
      return "direct";
  }
  return "?";
}

absl::StatusOr<Algorithm> ParseAlgorithm(absl::string_view text) {
  for (Algorithm a :
       {Algorithm::kAuto, Algorithm::kRing, Algorithm::kBidirRing,
        Algorithm::kTorus, Algorithm::kMultiAxis, Algorithm::kDirect}) {
    if (text == AlgorithmName(a)) return a;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("algorithm \"", text,
                   "\" is not allowed; expected auto, ring, bidir_ring, torus, "
                   "multi_axis or direct"));
}

// ---- GroupPartition / PermutePairs ----

absl::StatusOr<std::shared_ptr<const GroupPartition>> GroupPartition::Create(
    const Topology& t, std::vector<std::vector<int>> groups) {
  auto p = std::make_shared<GroupPartition>();
  const int n = t.num_devices();
  p->group_of_.assign(n, -1);
  p->position_of_.assign(n, -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "replica group ", g, " is empty; every group needs >= 1 device"));
    }
    for (size_t i = 0; i < groups[g].size(); ++i) {
      const int d = groups[g][i];
      if (d < 0 || d >= n) {
        return absl::InvalidArgumentError(absl::StrCat(
            "replica group ", g, ": device ", d, " is not a device of ",
            t.name(), "; allowed: 0..", n - 1));
      }
      if (p->group_of_[d] >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "replica groups are not a partition: device ", d, " is in group ",
            p->group_of_[d], " and in group ", g));
      }
      p->group_of_[d] = static_cast<int>(g);
      p->position_of_[d] = static_cast<int>(i);
    }
  }
  for (int d = 0; d < n; ++d) {
    if (p->group_of_[d] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("replica groups are not a partition: device ", d,
                       " is in no group; the groups must cover all ", n,
                       " devices of ", t.name()));
    }
  }
  for (const std::vector<int>& group : groups) {
    // Aligned: on every axis either one value or the full axis, and as many
    // devices as the box of full axes holds.
    std::vector<int> span;
    bool aligned = true;
    int64_t box = 1;
    for (int axis : {kCoreAxis, 0, 1, 2}) {
      int lo = AxisCoord(t, group[0], axis), hi = lo;
      for (int d : group) {
        lo = std::min(lo, AxisCoord(t, d, axis));
        hi = std::max(hi, AxisCoord(t, d, axis));
      }
      if (lo == hi) continue;
      if (lo != 0 || hi != AxisLength(t, axis) - 1) aligned = false;
      span.push_back(axis);
      box *= AxisLength(t, axis);
    }
    if (box != static_cast<int64_t>(group.size())) aligned = false;
    if (!aligned) span.clear();
    p->aligned_.push_back(aligned);
    p->span_axes_.push_back(std::move(span));
  }
  p->groups_ = std::move(groups);
  return std::shared_ptr<const GroupPartition>(std::move(p));
}

absl::StatusOr<std::shared_ptr<const PermutePairs>> PermutePairs::Create(
    const Topology& t, std::vector<std::pair<int, int>> pairs) {
  auto p = std::make_shared<PermutePairs>();
  const int n = t.num_devices();
  p->target_of_.assign(n, -1);
  p->source_of_.assign(n, -1);
  for (const auto& [src, dst] : pairs) {
    for (int d : {src, dst}) {
      if (d < 0 || d >= n) {
        return absl::InvalidArgumentError(absl::StrCat(
            "permute pair ", src, "->", dst, ": device ", d,
            " is not a device of ", t.name(), "; allowed: 0..", n - 1));
      }
    }
    if (src == dst) {
      return absl::InvalidArgumentError(absl::StrCat(
          "permute pair ", src, "->", dst,
          " sends a device to itself; source and target must differ"));
    }
    if (p->target_of_[src] >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("permute pair ", src, "->", dst, ": device ", src,
                       " is already the source of a pair"));
    }
    if (p->source_of_[dst] >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("permute pair ", src, "->", dst, ": device ", dst,
                       " is already the target of a pair"));
    }
    p->target_of_[src] = dst;
    p->source_of_[dst] = src;
  }
  p->pairs_ = std::move(pairs);
  return std::shared_ptr<const PermutePairs>(std::move(p));
}

// ---- Algorithm choice and bounds ----

absl::StatusOr<Algorithm> ResolveAlgorithm(const Topology& t,
                                           const CollectiveRequest& r,
                                           int group) {
  const char* op = CollectiveOpName(r.op);
  if (r.bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " of ", r.bytes, " bytes: bytes must be > 0"));
  }
  if (r.op == CollectiveOp::kCollectivePermute) {
    if (r.pairs == nullptr) {
      return absl::InvalidArgumentError("permute needs source-target pairs");
    }
    if (r.algorithm != Algorithm::kAuto && r.algorithm != Algorithm::kDirect) {
      return absl::InvalidArgumentError(
          absl::StrCat("algorithm ", AlgorithmName(r.algorithm),
                       " cannot run permute; allowed: auto, direct"));
    }
    return Algorithm::kDirect;
  }
  if (r.groups == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " needs replica groups"));
  }
  const std::vector<int>& members = r.groups->group(group);
  const int n = static_cast<int>(members.size());
  if (r.bytes % n != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " of ", r.bytes, " bytes over group ", group, " ",
                     GroupText(members),
                     ": bytes must be a multiple of the group size ", n));
  }
  if (r.op == CollectiveOp::kAllToAll) {
    if (r.algorithm != Algorithm::kAuto && r.algorithm != Algorithm::kDirect) {
      return absl::InvalidArgumentError(
          absl::StrCat("algorithm ", AlgorithmName(r.algorithm),
                       " cannot run all_to_all; allowed: auto, direct"));
    }
    return Algorithm::kDirect;
  }
  const bool aligned = r.groups->aligned(group);
  switch (r.algorithm) {
    case Algorithm::kAuto:
      // The auto rule (collective.h): several axes at once when the group
      // spans several, as on TPUs (sheet C.3 "Multi-axis").
      if (!aligned) return Algorithm::kBidirRing;
      return r.groups->span_axes(group).size() >= 2 ? Algorithm::kMultiAxis
                                                    : Algorithm::kTorus;
    case Algorithm::kRing:
    case Algorithm::kBidirRing:
      return r.algorithm;
    case Algorithm::kTorus:
    case Algorithm::kMultiAxis:
      if (!aligned) {
        return absl::InvalidArgumentError(absl::StrCat(
            "algorithm ", AlgorithmName(r.algorithm), " cannot run ", op,
            " on group ", group, " ", GroupText(members),
            ": it is not an aligned sub-torus (all devices of some full "
            "axes); allowed: auto, ring, bidir_ring"));
      }
      return r.algorithm;
    case Algorithm::kDirect:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("algorithm direct cannot run ", op,
                   "; allowed: auto, ring, bidir_ring, torus, multi_axis"));
}

namespace {

// Latency of the route between two devices.
int64_t RouteLatency(const Topology& t, const NetConfig& c, int a, int b) {
  const int ca = t.chip_of_device(a), cb = t.chip_of_device(b);
  if (ca == cb) return a == b ? 0 : c.on_chip_latency.count();
  return t.Hops(ca, cb) * c.hop_latency.count();
}

// Largest injection rate of a device (its chip's links, plus the on-chip
// path when the chip has two devices).
double InjectionRate(const Topology& t, const NetConfig& c, int device) {
  double rate = t.NumLinks(t.chip_of_device(device)) * c.link_bytes_per_second;
  if (t.devices_per_chip() == 2) rate += c.on_chip_bytes_per_second;
  return rate;
}

}  // namespace

Picoseconds CollectiveBandwidthBound(const Topology& t, const NetConfig& c,
                                     const CollectiveRequest& r, int group) {
  const double s = static_cast<double>(r.bytes);
  if (r.op == CollectiveOp::kCollectivePermute) {
    int64_t best = 0;
    for (const auto& [src, dst] : r.pairs->pairs()) {
      const bool same_chip = t.chip_of_device(src) == t.chip_of_device(dst);
      const double rate =
          same_chip ? c.on_chip_bytes_per_second : c.link_bytes_per_second;
      best = std::max(best, CeilPs(s, 1e12 / rate) + RouteLatency(t, c, src, dst));
    }
    return Picoseconds(best);
  }
  const std::vector<int>& m = r.groups->group(group);
  const int n = static_cast<int>(m.size());
  if (n == 1) return Picoseconds(0);
  double rate = 0;
  for (int d : m) rate = std::max(rate, InjectionRate(t, c, d));
  const double frac = static_cast<double>(n - 1) / n;
  double factor = 1;
  if (r.op == CollectiveOp::kAllReduce) factor = 2;
  double bw_ps = factor * frac * s / rate * 1e12;
  if (r.op == CollectiveOp::kAllToAll) {
    // Bisection: for each chip axis, the middle cut; members on each side.
    for (int axis = 0; axis < 3; ++axis) {
      const int len = t.dims()[axis];
      if (len < 2) continue;
      int64_t low = 0;
      for (int d : m) low += AxisCoord(t, d, axis) < len / 2 ? 1 : 0;
      const int64_t high = n - low;
      const int64_t cut_links =
          static_cast<int64_t>(t.num_chips() / len) * (t.wraps(axis) ? 2 : 1);
      const double crossing = static_cast<double>(low) * high * (s / n);
      bw_ps = std::max(bw_ps,
                       crossing / (cut_links * c.link_bytes_per_second) * 1e12);
    }
  }
  return Picoseconds(static_cast<int64_t>(std::floor(bw_ps)));
}

LowerBound CollectiveLowerBound(const Topology& t, const NetConfig& c,
                                const CollectiveRequest& r, int group) {
  LowerBound bound;
  bound.bandwidth = CollectiveBandwidthBound(t, c, r, group);
  if (r.op == CollectiveOp::kCollectivePermute) {
    int64_t lat = 0;
    for (const auto& [src, dst] : r.pairs->pairs()) {
      lat = std::max(lat, RouteLatency(t, c, src, dst));
    }
    bound.latency = Picoseconds(lat);
    return bound;
  }
  const std::vector<int>& m = r.groups->group(group);
  const int n = static_cast<int>(m.size());
  if (n == 1) return bound;
  int64_t lat = 0;
  const int firsts = n <= 1024 ? n : 1;
  for (int i = 0; i < firsts; ++i) {
    for (int j = 0; j < n; ++j) {
      lat = std::max(lat, RouteLatency(t, c, m[i], m[j]));
      lat = std::max(lat, RouteLatency(t, c, m[j], m[i]));
    }
  }
  bound.latency = Picoseconds(lat);
  return bound;
}

// ---- Data path ----

VectorRateDataPath::VectorRateDataPath(const NetConfig& config, int num_devices)
    : ps_per_byte_(1e12 / config.vector_reduce_bytes_per_second),
      granule_(config.pipeline_chunk_bytes),
      devices_(num_devices) {}

ChunkTiming VectorRateDataPath::Process(int device, ChunkTiming in,
                                        const ChunkWork& work) {
  PerDevice& dev = devices_[device];
  ChunkWork& total = dev.totals;
  total.bytes_reduced += work.bytes_reduced;
  total.bytes_read += work.bytes_read;
  total.bytes_written += work.bytes_written;
  if (work.bytes_reduced == 0) return in;
  const int64_t bytes = work.bytes_reduced;
  const int64_t g = std::min(granule_, bytes);
  const int64_t g_reduce = CeilPs(static_cast<double>(g), ps_per_byte_);
  const int64_t span = (in.tail - in.head).count();
  // The first granule has arrived g/bytes of the way from head to tail.
  const int64_t first = static_cast<int64_t>(
      std::ceil(static_cast<double>(span) * static_cast<double>(g) / bytes));
  // One vector unit per device: chunks are reduced one after another.
  const int64_t start = std::max(in.head.count(), dev.free_at);
  const int64_t busy_end =
      std::max(in.tail.count(),
               start + CeilPs(static_cast<double>(bytes), ps_per_byte_));
  dev.free_at = busy_end;
  ChunkTiming out;
  out.head = Picoseconds(std::max(in.head.count() + first, start) + g_reduce);
  out.tail = Picoseconds(busy_end + g_reduce);
  if (out.tail < out.head) out.tail = out.head;
  return out;
}

// ---- Endpoint ----

namespace {

enum class StreamKind { kReduceScatter, kAllGather, kDirect };

struct StreamSpec {
  StreamKind kind = StreamKind::kAllGather;
  int pipeline = 0;
  // Rings.
  int n = 1;
  int ring_pos = 0;
  int next = -1;
  int64_t bytes = 0;
  // Direct: (target, bytes) in send order, the tag step this device sends
  // with, and how many messages it receives.
  std::vector<std::pair<int, int64_t>> sends;
  uint32_t send_step = 0;
  int receives = 0;
};

struct Plan {
  Algorithm algorithm = Algorithm::kAuto;
  std::vector<StreamSpec> streams;
  // pipelines[p][phase] = stream indices running together.
  std::vector<std::vector<std::vector<int>>> pipelines;
};

// Adds a ring along `axis` (or over the group when axis < 0) to `phase`.
void AddRing(Plan& plan, std::vector<int>& phase, StreamKind kind, int pipeline,
             int n, int pos, int next, int prev, int64_t bytes,
             bool bidirectional) {
  auto add = [&](int ring_pos, int to, int64_t b) {
    StreamSpec s;
    s.kind = kind;
    s.pipeline = pipeline;
    s.n = n;
    s.ring_pos = ring_pos;
    s.next = to;
    s.bytes = b;
    phase.push_back(static_cast<int>(plan.streams.size()));
    plan.streams.push_back(std::move(s));
  };
  if (!bidirectional || n <= 2) {
    add(pos, next, bytes);
    return;
  }
  add(pos, next, bytes - bytes / 2);
  add((n - pos) % n, prev, bytes / 2);
}

absl::StatusOr<Plan> BuildPlan(const Topology& t, const CollectiveRequest& r,
                               int device) {
  Plan plan;
  if (r.op == CollectiveOp::kCollectivePermute) {
    TPUSIM_ASSIGN_OR_RETURN(plan.algorithm, ResolveAlgorithm(t, r, 0));
    StreamSpec s;
    s.kind = StreamKind::kDirect;
    if (r.pairs->target_of(device) >= 0) {
      s.sends.push_back({r.pairs->target_of(device), r.bytes});
    }
    s.receives = r.pairs->source_of(device) >= 0 ? 1 : 0;
    plan.streams.push_back(std::move(s));
    plan.pipelines.push_back({{0}});
    return plan;
  }
  if (r.groups == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(CollectiveOpName(r.op), " needs replica groups"));
  }
  const int g = r.groups->group_of(device);
  TPUSIM_ASSIGN_OR_RETURN(plan.algorithm, ResolveAlgorithm(t, r, g));
  const std::vector<int>& members = r.groups->group(g);
  const int n = static_cast<int>(members.size());
  const int pos = r.groups->position_of(device);
  if (n == 1) return plan;  // nothing to exchange

  if (plan.algorithm == Algorithm::kDirect) {  // all_to_all
    StreamSpec s;
    s.kind = StreamKind::kDirect;
    for (int k = 1; k < n; ++k) {
      const int to = (pos + k) % n;
      s.sends.push_back({members[to], ChunkBytes(r.bytes, n, to)});
    }
    s.send_step = static_cast<uint32_t>(pos);
    s.receives = n - 1;
    plan.streams.push_back(std::move(s));
    plan.pipelines.push_back({{0}});
    return plan;
  }
  const bool rs = r.op != CollectiveOp::kAllGather;
  const bool ag = r.op != CollectiveOp::kReduceScatter;
  if (plan.algorithm == Algorithm::kRing ||
      plan.algorithm == Algorithm::kBidirRing) {
    const bool bidir = plan.algorithm == Algorithm::kBidirRing;
    const int next = members[(pos + 1) % n];
    const int prev = members[(pos + n - 1) % n];
    plan.pipelines.emplace_back();
    for (StreamKind kind :
         {StreamKind::kReduceScatter, StreamKind::kAllGather}) {
      if ((kind == StreamKind::kReduceScatter && !rs) ||
          (kind == StreamKind::kAllGather && !ag)) {
        continue;
      }
      std::vector<int> phase;
      AddRing(plan, phase, kind, 0, n, pos, next, prev, r.bytes, bidir);
      plan.pipelines[0].push_back(std::move(phase));
    }
    return plan;
  }
  // Torus / multi-axis over the spanned axes.
  const std::vector<int>& axes = r.groups->span_axes(g);
  const int k = plan.algorithm == Algorithm::kMultiAxis
                    ? static_cast<int>(axes.size())
                    : 1;
  for (int p = 0; p < k; ++p) {
    std::vector<int> order;
    for (size_t i = 0; i < axes.size(); ++i) {
      order.push_back(axes[(i + p) % axes.size()]);
    }
    // Shard sizes: D_1 = the part's bytes, D_{i+1} = D_i / N_i.
    std::vector<int64_t> sizes;
    int64_t d = ChunkBytes(r.bytes, k, p);
    for (int axis : order) {
      sizes.push_back(d);
      d /= AxisLength(t, axis);
    }
    std::vector<std::vector<int>> phases;
    auto ring_phase = [&](StreamKind kind, size_t i) {
      const int axis = order[i];
      const int len = AxisLength(t, axis);
      const int c = AxisCoord(t, device, axis);
      std::vector<int> phase;
      AddRing(plan, phase, kind, p, len, c,
              DeviceWithAxis(t, device, axis, (c + 1) % len),
              DeviceWithAxis(t, device, axis, (c + len - 1) % len), sizes[i],
              /*bidirectional=*/true);
      phases.push_back(std::move(phase));
    };
    if (rs) {
      for (size_t i = 0; i < order.size(); ++i) {
        ring_phase(StreamKind::kReduceScatter, i);
      }
    }
    if (ag) {
      for (size_t i = order.size(); i-- > 0;) {
        ring_phase(StreamKind::kAllGather, i);
      }
    }
    plan.pipelines.push_back(std::move(phases));
  }
  return plan;
}

// A message a ring stream received, by step. bytes < 0: not arrived yet (a
// message may carry 0 bytes). 24 bytes, read in step order.
struct Arrival {
  int64_t bytes = -1;
  Picoseconds head;
  Picoseconds tail;
};
static_assert(sizeof(Arrival) == 24, "an arrival slot is 24 bytes");

}  // namespace

// One stream of an active collective: the spec fields a message needs
// (copied from the plan at Start) and the stream's state, in one cache line.
// With thousands of chips nothing of an endpoint stays in cache between two
// of its events, so every line and every pointer hop a message takes is a
// miss; the spec list, the state list and a vector of arrivals per stream
// used to be separate allocations.
struct alignas(64) CollectiveEndpoint::StreamState {
  StreamKind kind = StreamKind::kAllGather;
  bool started = false;
  int32_t pipeline = 0;
  int32_t n = 1;
  int32_t ring_pos = 0;
  int32_t next = -1;
  int32_t next_step = 0;  // rings: the next step to process
  // Direct: the messages received. Rings: the arrivals waiting for an
  // earlier step, which hold the endpoint's floor (CollectiveEndpoint::Hold).
  int32_t count = 0;
  int64_t bytes = 0;
  Picoseconds start;
  Picoseconds last;             // direct: latest processed tail
  // Rings with n > 1: n - 1 slots by step, owned, while the stream runs or
  // has messages waiting.
  Arrival* arrivals = nullptr;

  // Allocates the slots (all absent) the first time they are needed: when
  // the stream starts or its first message comes. Freed when the stream
  // ends, so the few buffers of the running streams are reused warm (one
  // block for every stream of the collective, sized at Start, was measured
  // slower: it was 5 KiB per collective of which a phase used a tenth).
  void ReadySlots() {
    static_assert(sizeof(StreamState) == 64, "a stream is one cache line");
    if (arrivals == nullptr) arrivals = new Arrival[n - 1];
  }
};

namespace {

// The streams of one active collective: one allocation, made at Start from
// the plan (the first line of the Active leads to a stream in one hop).
struct StreamBlockFree {
  void operator()(void* p) const {
    ::operator delete(p, std::align_val_t(64));
  }
};

bool IsRing(StreamKind kind) { return kind != StreamKind::kDirect; }

}  // namespace

struct alignas(64) CollectiveEndpoint::Active {
  // The first line: what a message and the scheduler's prefetch read.
  uint32_t seq = 0;
  bool started = false;
  StreamState* streams = nullptr;  // num_streams (in `block`), after Start
  int32_t num_streams = 0;
  // The rest is read when a phase or the collective starts or ends.
  ~Active() {
    for (int s = 0; s < num_streams; ++s) delete[] streams[s].arrivals;
  }
  std::unique_ptr<void, StreamBlockFree> block;
  Plan plan;
  CollectiveResult result;
  DoneCallback done;
  std::vector<int> phase;    // per pipeline
  std::vector<int> pending;  // streams left in the current phase
  std::vector<Picoseconds> phase_end;
  int pipelines_left = 0;
  // Messages that arrived before this endpoint started the collective.
  std::vector<std::pair<MessageTag, Arrival>> early;
  // Direct streams: messages that arrived before the stream started
  // (stream, message), in arrival order.
  std::vector<std::pair<int, Arrival>> direct_early;
};

CollectiveEndpoint::CollectiveEndpoint(int device, const Topology* topology,
                                       EndpointTransport* transport,
                                       CollectiveDataPath* data_path)
    : device_(device),
      data_path_(data_path),
      transport_(transport),
      topology_(topology) {
  // Allocated now, next to the endpoint (it is built right after it), for
  // the collectives a device usually has in flight: the list is read for
  // every message and prefetched; far from the endpoint it cost a TLB miss
  // of its own.
  active_.reserve(kActiveReserve);
}

CollectiveEndpoint::~CollectiveEndpoint() = default;

static_assert(sizeof(CollectiveEndpoint) == 128,
              "the endpoint is the two lines its prefetch fetches");

CollectiveEndpoint::Active* CollectiveEndpoint::Find(uint32_t seq) {
  for (const ActiveRef& r : active_) {
    if (r.seq == seq) return r.active.get();
  }
  return nullptr;
}

absl::Status CollectiveEndpoint::Start(const CollectiveRequest& request,
                                       DoneCallback done) {
  TPUSIM_ASSIGN_OR_RETURN(Plan plan, BuildPlan(*topology_, request, device_));
  const Picoseconds now = transport_->Now();
  if (request.channel >= kChannelSeqBit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "collective channel ", request.channel,
        " is not allowed; expected 1..", kChannelSeqBit - 1,
        ", or 0 for the next sequence number"));
  }
  SetFloor();
  const uint32_t seq = request.channel != 0 ? kChannelSeqBit | request.channel
                                            : next_seq_++;
  Active* a = Find(seq);
  if (a == nullptr) {
    active_.push_back(ActiveRef{seq, std::make_unique<Active>()});
    a = active_.back().active.get();
    a->seq = seq;
  }
  ++stats_.collectives;
  a->started = true;
  a->plan = std::move(plan);
  a->done = std::move(done);
  a->result.op = request.op;
  a->result.algorithm = a->plan.algorithm;
  a->result.bytes = request.bytes;
  a->result.start = now;
  a->result.end = now;
  const std::vector<StreamSpec>& specs = a->plan.streams;
  const size_t num_streams = specs.size();
  if (num_streams > 0) {
    a->block.reset(::operator new(num_streams * sizeof(StreamState),
                                  std::align_val_t(64)));
    a->streams = static_cast<StreamState*>(a->block.get());
    for (size_t s = 0; s < num_streams; ++s) {
      const StreamSpec& spec = specs[s];
      StreamState* st = new (&a->streams[s]) StreamState();
      st->kind = spec.kind;
      st->pipeline = spec.pipeline;
      st->n = spec.n;
      st->ring_pos = spec.ring_pos;
      st->next = spec.next;
      st->bytes = spec.bytes;
    }
  }
  a->num_streams = static_cast<int32_t>(num_streams);
  // A ring stream's spec is in its state now; only direct streams read
  // theirs later (sends, receives). Without them the specs go: with
  // thousands of devices, each with its running collectives' plans, they
  // were the network's largest memory (70 MB at 1024 devices).
  bool any_direct = false;
  for (size_t s = 0; s < num_streams; ++s) {
    any_direct |= a->streams[s].kind == StreamKind::kDirect;
  }
  if (!any_direct) std::vector<StreamSpec>().swap(a->plan.streams);
  const int pipelines = static_cast<int>(a->plan.pipelines.size());
  a->phase.assign(pipelines, 0);
  a->pending.assign(pipelines, 0);
  a->phase_end.assign(pipelines, now);
  a->pipelines_left = pipelines;
  std::vector<std::pair<MessageTag, Arrival>> early = std::move(a->early);
  a->early.clear();
  for (const auto& [tag, arrival] : early) {
    StreamState& st = a->streams[tag.stream];
    if (!IsRing(st.kind)) {
      a->direct_early.push_back({static_cast<int>(tag.stream), arrival});
    } else {
      st.ReadySlots();
      st.arrivals[tag.step] = arrival;
    }
  }
  if (pipelines == 0) {
    transport_->ScheduleTimer(now, seq);
    return absl::OkStatus();
  }
  for (int p = 0; p < pipelines; ++p) StartPhase(*a, p, now);
  return absl::OkStatus();
}

void CollectiveEndpoint::StartPhase(Active& a, int p, Picoseconds at) {
  const std::vector<int> streams = a.plan.pipelines[p][a.phase[p]];
  a.pending[p] = static_cast<int>(streams.size());
  a.phase_end[p] = at;
  for (int s : streams) StartStream(a, s, at);
}

void CollectiveEndpoint::SendChunk(int dst, int64_t bytes,
                                   const MessageTag& tag, ChunkTiming ready) {
  ChunkWork work;
  work.bytes_read = bytes;
  work.floor = floor_;
  const ChunkTiming out = data_path_->Process(device_, ready, work);
  ++stats_.messages_sent;
  stats_.bytes_sent += bytes;
  transport_->Send(dst, bytes, tag, out.head, out.tail);
}

void CollectiveEndpoint::StartStream(Active& a, int s, Picoseconds at) {
  StreamState& st = a.streams[s];
  st.started = true;
  st.start = at;
  st.last = at;
  const ChunkTiming ready{at, at};
  if (st.kind == StreamKind::kDirect) {
    const StreamSpec& spec = a.plan.streams[s];
    for (const auto& [to, bytes] : spec.sends) {
      SendChunk(to, bytes,
                MessageTag{a.seq, static_cast<uint32_t>(s), spec.send_step},
                ready);
    }
    if (spec.receives == 0) {
      StreamDone(a, s, at);
      return;
    }
    // This stream's messages that came before it started, in order.
    std::vector<Arrival> early;
    auto& waiting = a.direct_early;
    for (size_t i = 0; i < waiting.size();) {
      if (waiting[i].first == s) {
        early.push_back(waiting[i].second);
        waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    for (const Arrival& e : early) {
      Deliver(a, MessageTag{a.seq, static_cast<uint32_t>(s), 0}, e.bytes,
              e.head, e.tail);
    }
    return;
  }
  if (st.n == 1) {
    StreamDone(a, s, at);
    return;
  }
  st.ReadySlots();
  SendChunk(st.next, ChunkBytes(st.bytes, st.n, st.ring_pos),
            MessageTag{a.seq, static_cast<uint32_t>(s), 0}, ready);
  Drain(a, s, kStarting);
  // Arrivals from before the start still waiting for an earlier step hold
  // the floor from the start on (they are processed from it at the
  // earliest).
  if (st.arrivals == nullptr) return;
  for (int step = st.next_step; step < st.n - 1; ++step) {
    if (st.arrivals[step].bytes < 0) continue;
    Hold(Max(st.arrivals[step].head, at));
    ++st.count;
  }
}

void CollectiveEndpoint::Prefetch(int stage, const MessageTag& tag) const {
  if (stage == 0) {
    // Both lines: a message reads the first and a forward writes the send
    // counters in the second.
    __builtin_prefetch(this);
    __builtin_prefetch(reinterpret_cast<const char*>(this) + 64);
    return;
  }
  if (stage == 1) {
    __builtin_prefetch(active_.data());
    return;
  }
  const Active* a = nullptr;
  for (const ActiveRef& r : active_) {
    if (r.seq == tag.seq) {
      a = r.active.get();
      break;
    }
  }
  if (a == nullptr) return;
  if (stage == 2) {
    __builtin_prefetch(a);
    return;
  }
  if (a->streams == nullptr || tag.stream >= static_cast<uint32_t>(a->num_streams)) {
    return;
  }
  const StreamState& st = a->streams[tag.stream];
  if (stage == 3) {
    __builtin_prefetch(&st);
    return;
  }
  // Stage 4: the slot the message fills and the next one (Drain looks at
  // both), or none before the stream's first message.
  if (st.arrivals != nullptr && tag.step + 1 < static_cast<uint32_t>(st.n)) {
    __builtin_prefetch(st.arrivals + tag.step);
    __builtin_prefetch(st.arrivals + tag.step + 1);
  }
}

void CollectiveEndpoint::Hold(Picoseconds start) {
  if (held_ == nullptr) held_ = std::make_unique<absl::btree_multiset<int64_t>>();
  held_->insert(start.count());
}

void CollectiveEndpoint::Release(Picoseconds start) {
  auto it = held_ == nullptr ? decltype(held_->end())() : held_->find(start.count());
  TPUSIM_CHECK(held_ != nullptr && it != held_->end())
      << "device " << device_ << ": no message held from " << start.count()
      << " ps";
  held_->erase(it);
}

Picoseconds CollectiveEndpoint::Floor() const {
  const Picoseconds now = transport_->Now();
  if (held_ == nullptr || held_->empty()) return now;
  return std::min(now, Picoseconds(*held_->begin()));
}

void CollectiveEndpoint::SetFloor() { floor_ = Floor(); }

void CollectiveEndpoint::OnMessage(const MessageTag& tag, int64_t bytes,
                                   Picoseconds head, Picoseconds tail) {
  SetFloor();
  ++stats_.messages_received;
  stats_.bytes_received += bytes;
  Active* a = Find(tag.seq);
  if (a == nullptr) {
    active_.push_back(ActiveRef{tag.seq, std::make_unique<Active>()});
    a = active_.back().active.get();
    a->seq = tag.seq;
  }
  if (!a->started) {
    a->early.push_back({tag, Arrival{bytes, head, tail}});
    return;
  }
  Deliver(*a, tag, bytes, head, tail);
}

void CollectiveEndpoint::Deliver(Active& a, const MessageTag& tag,
                                 int64_t bytes, Picoseconds head,
                                 Picoseconds tail) {
  StreamState& st = a.streams[tag.stream];
  if (st.kind == StreamKind::kDirect) {
    if (!st.started) {
      a.direct_early.push_back(
          {static_cast<int>(tag.stream), Arrival{bytes, head, tail}});
      return;
    }
    ChunkWork work;
    work.bytes_written = bytes;
    work.floor = floor_;
    const ChunkTiming ready = data_path_->Process(
        device_, ChunkTiming{Max(head, st.start), Max(tail, st.start)}, work);
    st.last = Max(st.last, ready.tail);
    if (++st.count == a.plan.streams[tag.stream].receives) {
      StreamDone(a, static_cast<int>(tag.stream), st.last);
    }
    return;
  }
  st.ReadySlots();
  st.arrivals[tag.step] = Arrival{bytes, head, tail};
  if (!st.started) return;
  Drain(a, static_cast<int>(tag.stream), static_cast<int>(tag.step));
  // Waiting for an earlier step: it holds the floor until processed, from
  // before now (its head).
  if (st.arrivals != nullptr && st.next_step <= static_cast<int>(tag.step)) {
    Hold(Max(head, st.start));
    ++st.count;
  }
}

void CollectiveEndpoint::Drain(Active& a, int s, int fresh) {
  StreamState& st = a.streams[s];
  const int steps = st.n - 1;
  while (st.next_step < steps && st.arrivals[st.next_step].bytes >= 0) {
    const int step = st.next_step++;
    const Arrival in = st.arrivals[step];
    // An arrival that waited in a running stream held the floor (Deliver,
    // StartStream); this event's floor still counts it.
    if (step != fresh && fresh != kStarting) {
      TPUSIM_CHECK(st.count > 0) << "stream " << s << " step " << step;
      --st.count;
      Release(Max(in.head, st.start));
    }
    ChunkWork work;
    work.bytes_written = in.bytes;
    if (st.kind == StreamKind::kReduceScatter) {
      work.bytes_reduced = in.bytes;
      work.bytes_read = in.bytes;
    }
    work.floor = floor_;
    const ChunkTiming ready = data_path_->Process(
        device_, ChunkTiming{Max(in.head, st.start), Max(in.tail, st.start)},
        work);
    if (step + 1 < steps) {
      // Forward the chunk just received (reduced) in the next step.
      SendChunk(st.next, in.bytes,
                MessageTag{a.seq, static_cast<uint32_t>(s),
                           static_cast<uint32_t>(step + 1)},
                ready);
    } else {
      StreamDone(a, s, ready.tail);
      return;
    }
  }
}

void CollectiveEndpoint::StreamDone(Active& a, int s, Picoseconds at) {
  delete[] a.streams[s].arrivals;
  a.streams[s].arrivals = nullptr;
  const int p = a.streams[s].pipeline;
  a.phase_end[p] = Max(a.phase_end[p], at);
  if (--a.pending[p] > 0) return;
  if (++a.phase[p] < static_cast<int>(a.plan.pipelines[p].size())) {
    StartPhase(a, p, a.phase_end[p]);
    return;
  }
  a.result.end = Max(a.result.end, a.phase_end[p]);
  if (--a.pipelines_left == 0) transport_->ScheduleTimer(a.result.end, a.seq);
}

void CollectiveEndpoint::OnTimer(uint64_t token) {
  for (size_t i = 0; i < active_.size(); ++i) {
    if (active_[i].seq != token) continue;
    std::unique_ptr<Active> a = std::move(active_[i].active);
    active_.erase(active_.begin() + i);
    if (a->done) transport_->Finish(std::move(a->done), a->result);
    return;
  }
}

}  // namespace tpusim::sim::net
