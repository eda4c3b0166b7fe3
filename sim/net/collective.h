// sim/net/collective.h
//
// Collectives as distributed algorithms. Every device has a CollectiveEndpoint
// that runs its own part of each collective as a callback-driven state
// machine; endpoints exchange messages only through the network's links
// (EndpointTransport). Nothing here knows every chip at run time: the replica
// groups are static configuration (as in a compiled XLA program), and each
// endpoint derives its own ring neighbours from the topology.
//
//   auto groups = *GroupPartition::Create(topology, {{0, 1, 2, 3}});
//   CollectiveRequest r{CollectiveOp::kAllReduce, /*bytes=*/64 << 20,
//                       Algorithm::kAuto, groups, nullptr};
//   for (int d : {0, 1, 2, 3}) {                 // each device, on its chip
//     TPUSIM_RETURN_IF_ERROR(network->endpoint(d).Start(
//         r, [](const CollectiveResult& done) { ... done.end ... }));
//   }
//
// Sizes: `bytes` is S, per device: all_reduce S in and out; all_gather S out
// (S/N in); reduce_scatter S in (S/N out); all_to_all S in and out (S/N to
// each member); collective_permute S from each source to its target.
//
// Algorithms (tpusim's model of the ICI collectives, sheet C.3):
// * ring: one ring over the group in group order (routed paths between
//   members that are not neighbours); all_reduce is reduce-scatter then
//   all-gather, N-1 steps each, chunk S/N.
// * bidir_ring: the buffer split in two halves on two rings going opposite
//   ways (a group of 2 uses one ring: both ways are the same link pair).
// * torus: for an aligned sub-torus (the group is every device of some full
//   axes, the other coordinates fixed): reduce-scatter along each spanned
//   axis in turn with a bidirectional ring on the shrinking shard, then
//   all-gather back in reverse order. Axis order: the on-chip core axis (v2,
//   v3) first, then x, y, z. Rings follow the physical axis; without
//   wraparound the ring's closing step is routed back along the line.
// * multi_axis: the buffer split into k parts (k spanned axes), part j runs
//   the torus algorithm with the axis order rotated by j.
// * direct: all_to_all sends S/N straight to every member (routed),
//   collective_permute sends S from each source to its target.
// Auto rule (per group), the choice a TPU runtime makes as the sheet describes
// it (C.3 "Multi-axis": a collective over k mesh axes runs on all k at once,
// dividing the bandwidth term by k): all_to_all and permute use direct (the
// only algorithm they have); an aligned sub-torus spanning two or more axes
// (the v2/v3 core axis counts) uses multi_axis, one spanning a single axis
// uses torus (a bidirectional ring along it); any other group uses bidir_ring
// (the best ring: half the data per direction). For 16 MiB and more this is
// within 1.3x of CollectiveLowerBound on the wrapped slices v4-128, v5p-128
// and v5e 16x16 (tested); without wraparound the bound is out of reach (see
// docs/collectives.md). On v2/v3 a whole-slice all_gather is ~2% slower with
// multi_axis than with torus (its core-axis part); the rule does not special
// case it.
//
// Pipelining: a chunk received in ring step s is reduced (or stored) and
// forwarded in step s+1 granule by granule, as a DMA engine does; the data
// path (CollectiveDataPath) reports the work of every chunk to the chip and
// tells when the processed data is ready.

#ifndef TPUSIM_SIM_NET_COLLECTIVE_H_
#define TPUSIM_SIM_NET_COLLECTIVE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/units.h"
#include "sim/net/net_config.h"
#include "sim/net/topology.h"

namespace tpusim::sim::net {

enum class CollectiveOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kCollectivePermute
};
enum class Algorithm { kAuto, kRing, kBidirRing, kTorus, kMultiAxis, kDirect };

// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "permute".
const char* CollectiveOpName(CollectiveOp op);
absl::StatusOr<CollectiveOp> ParseCollectiveOp(absl::string_view text);
// "auto", "ring", "bidir_ring", "torus", "multi_axis", "direct".
const char* AlgorithmName(Algorithm a);
absl::StatusOr<Algorithm> ParseAlgorithm(absl::string_view text);

// Replica groups: a partition of every device of the topology, validated and
// indexed once (static configuration shared by all endpoints, like the
// replica groups of a compiled program).
class GroupPartition {
 public:
  // InvalidArgument naming the value when a group is empty, a device id is
  // out of range, a device appears twice, or a device is in no group.
  static absl::StatusOr<std::shared_ptr<const GroupPartition>> Create(
      const Topology& topology, std::vector<std::vector<int>> groups);

  int num_groups() const { return static_cast<int>(groups_.size()); }
  const std::vector<int>& group(int g) const { return groups_[g]; }
  int group_of(int device) const { return group_of_[device]; }
  int position_of(int device) const { return position_of_[device]; }
  // True when group g is every device of some full axes with the other
  // coordinates fixed (a group of one device is aligned with no axes).
  bool aligned(int g) const { return aligned_[g]; }
  // The axes group g spans (0, 1, 2 = x, y, z; 3 = the on-chip core axis),
  // in the torus algorithm's order (core first, then x, y, z). Empty unless
  // aligned.
  const std::vector<int>& span_axes(int g) const { return span_axes_[g]; }

 private:
  std::vector<std::vector<int>> groups_;
  std::vector<int> group_of_;
  std::vector<int> position_of_;
  std::vector<bool> aligned_;
  std::vector<std::vector<int>> span_axes_;
};

// Source -> target pairs of a collective_permute, validated once.
class PermutePairs {
 public:
  // InvalidArgument when an id is out of range, a device is the source or the
  // target of two pairs, or a pair sends a device to itself.
  static absl::StatusOr<std::shared_ptr<const PermutePairs>> Create(
      const Topology& topology, std::vector<std::pair<int, int>> pairs);

  const std::vector<std::pair<int, int>>& pairs() const { return pairs_; }
  int target_of(int device) const { return target_of_[device]; }  // or -1
  int source_of(int device) const { return source_of_[device]; }  // or -1

 private:
  std::vector<std::pair<int, int>> pairs_;
  std::vector<int> target_of_;
  std::vector<int> source_of_;
};

struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int64_t bytes = 0;
  Algorithm algorithm = Algorithm::kAuto;
  std::shared_ptr<const GroupPartition> groups;  // every op but permute
  std::shared_ptr<const PermutePairs> pairs;     // permute
  // 0: the collective takes each member's next sequence number (every
  // member starts the same collectives in the same order). Else a channel
  // id (1..2^31-1) the members share, as XLA's send/recv channel_id: the
  // collective's messages are matched by it, so members may start it in
  // any order relative to their other collectives (a cross-core copy, whose
  // sender and receiver start different collectives). It must be unique
  // among the collectives in flight on each member.
  uint32_t channel = 0;
};
// Channel ids tag their messages with this bit set (sequence numbers stay
// below it).
inline constexpr uint32_t kChannelSeqBit = 1u << 31;

// Checks a request against the topology and picks the algorithm group g runs
// (the auto rule above, or the override). InvalidArgument naming the value and
// what is allowed: bytes <= 0; bytes not a multiple of the group size
// (all_reduce, all_gather, reduce_scatter, all_to_all); groups or pairs
// missing; an algorithm that cannot run the op or the group (torus or
// multi_axis on a group that is not an aligned sub-torus, direct for a
// reduction, a ring for all_to_all or permute).
absl::StatusOr<Algorithm> ResolveAlgorithm(const Topology& topology,
                                           const CollectiveRequest& request,
                                           int group);

// The op's own lower bound on group g (sheet C.3 and D), with L·B the largest
// injection rate of a member (its chip's links, plus the on-chip path on v2 and
// v3) and N the group size:
//   all_reduce 2(N-1)/N·S/(L·B); all_gather, reduce_scatter (N-1)/N·S/(L·B);
//   all_to_all the larger of (N-1)/N·S/(L·B) and the bisection bound (the
//   bytes that must cross the middle cut of each axis over the links cut);
//   permute max over pairs of S/B + hops·hop latency.
// `latency` is the hop-latency floor: the longest route between two members
// (one pair for permute). For groups above 1024 devices, only the routes
// from and to the first member are measured (still a valid bound).
struct LowerBound {
  common::Picoseconds bandwidth;
  common::Picoseconds latency;
  common::Picoseconds value() const {
    return bandwidth < latency ? latency : bandwidth;
  }
};
LowerBound CollectiveLowerBound(const Topology& topology,
                                const NetConfig& config,
                                const CollectiveRequest& request, int group);
// Its bandwidth part alone (what CollectiveLowerBound(...).bandwidth is), in
// time linear in the group size: the latency floor looks at pairs of members.
common::Picoseconds CollectiveBandwidthBound(const Topology& topology,
                                             const NetConfig& config,
                                             const CollectiveRequest& request,
                                             int group);

// ---- The chip-facing data path ----

// The work of one chunk on a device.
struct ChunkWork {
  int64_t bytes_reduced = 0;  // incoming bytes combined into the buffer
  int64_t bytes_read = 0;     // HBM bytes read (operand, or data sent)
  int64_t bytes_written = 0;  // HBM bytes written
  // No chunk of this device that the network processes from now on (this one
  // included) is available before `floor` (its head: the endpoint's
  // CollectiveEndpoint::Floor when the event that led to it began): a data
  // path may forget what it keeps of the time before. Not the chunk's timing.
  common::Picoseconds floor = common::Picoseconds(0);
};
// When the first and the last byte of a chunk are available.
struct ChunkTiming {
  common::Picoseconds head;
  common::Picoseconds tail;
};

// How a chip handles the data of its collectives: called for every chunk a
// device sends (input = when the data is available; work = the bytes read)
// and every chunk it receives (input = when its first and last byte arrived;
// work = reduced, read, written). Returns when the processed data is
// available (each field >= the input's); this is when a forwarded chunk can
// start and finish leaving. The chip's implementation charges its vector
// unit and HBM; it is called while the network runs that chip: with
// NetworkOptions::threads > 1 calls for devices of different chips can run at
// once on different threads, so per-device state only (no SystemC calls).
class CollectiveDataPath {
 public:
  virtual ~CollectiveDataPath() = default;
  virtual ChunkTiming Process(int device, ChunkTiming input,
                              const ChunkWork& work) = 0;
};

// The default data path: reductions run at the config's vector rate on one
// vector unit per device (chunks are reduced one after another), pipelined in
// granules of pipeline_chunk_bytes with the arrival: the first granule is
// ready one granule of arrival plus one granule of reduction after the head
// (or after the unit frees up); the whole chunk one granule of reduction after
// the later of its tail and (start + bytes/rate). Reads and writes are counted,
// not timed (the chip's own data path charges HBM).
class VectorRateDataPath : public CollectiveDataPath {
 public:
  VectorRateDataPath(const NetConfig& config, int num_devices);
  ChunkTiming Process(int device, ChunkTiming input,
                      const ChunkWork& work) override;
  // Totals per device.
  const ChunkWork& totals(int device) const { return devices_[device].totals; }

 private:
  double ps_per_byte_;
  int64_t granule_;
  struct PerDevice {
    ChunkWork totals;
    int64_t free_at = 0;  // when the device's vector unit is free
  };
  std::vector<PerDevice> devices_;
};

// ---- Endpoints ----

// Identifies a message of a collective: the collective's sequence number on
// its endpoints, the stream (ring) inside it, and the step (or the sender's
// position for direct transfers).
struct MessageTag {
  uint32_t seq = 0;
  uint32_t stream = 0;
  uint32_t step = 0;
};

struct CollectiveResult {
  CollectiveOp op = CollectiveOp::kAllReduce;
  Algorithm algorithm = Algorithm::kAuto;
  int64_t bytes = 0;
  common::Picoseconds start;
  common::Picoseconds end;
};

// What runs when a device's part of a collective ends.
using CollectiveDoneCallback = std::function<void(const CollectiveResult&)>;

// What an endpoint may do: send over the links, set a timer on its chip and
// hand over a finished collective's callback.
class EndpointTransport {
 public:
  virtual ~EndpointTransport() = default;
  virtual common::Picoseconds Now() const = 0;
  // Sends `bytes` to `dst_device`: its first byte can leave at `head_ready`,
  // its last at `tail_ready` (earlier times are taken as now).
  virtual void Send(int dst_device, int64_t bytes, const MessageTag& tag,
                    common::Picoseconds head_ready,
                    common::Picoseconds tail_ready) = 0;
  // Calls the endpoint's OnTimer(token) at time `at` (>= now) on its chip.
  virtual void ScheduleTimer(common::Picoseconds at, uint64_t token) = 0;
  // Runs `done(result)` (a non-empty callback) at the current simulated
  // time: at once by default. The network defers it until every chip due at
  // this time has run, then runs it on the SystemC thread (see network.h).
  virtual void Finish(CollectiveDoneCallback done,
                      const CollectiveResult& result) {
    done(result);
  }
};

// Per-device counters (the ones every message updates first: see
// CollectiveEndpoint's layout).
struct EndpointStats {
  int64_t messages_received = 0;
  int64_t bytes_received = 0;
  int64_t messages_sent = 0;
  int64_t bytes_sent = 0;
  int64_t collectives = 0;
};

// Aligned to a cache line, hot fields first: what a message reads and writes
// (active_, the data path, the transport, the counters) fits the object's
// two lines (128 bytes), which the network's prefetch fetches together; with
// thousands of chips each of them is otherwise a cache miss per message.
class alignas(64) CollectiveEndpoint {
 public:
  using DoneCallback = CollectiveDoneCallback;

  CollectiveEndpoint(int device, const Topology* topology,
                     EndpointTransport* transport,
                     CollectiveDataPath* data_path);
  ~CollectiveEndpoint();
  CollectiveEndpoint(const CollectiveEndpoint&) = delete;
  CollectiveEndpoint& operator=(const CollectiveEndpoint&) = delete;

  // Starts this device's part of `request` now. Every member of the device's
  // group must start the same request (in the same order of collectives,
  // unless the request has a channel);
  // `done` runs at the simulated time this device's part ends, on the
  // SystemC thread, once every chip due at that time has run (in chip order;
  // it may start collectives). Errors: as ResolveAlgorithm, and
  // InvalidArgument for a channel >= kChannelSeqBit (nothing starts).
  absl::Status Start(const CollectiveRequest& request, DoneCallback done);

  int device() const { return device_; }
  const EndpointStats& stats() const { return stats_; }
  // Between the network's events: no chunk of this device processed from
  // now on starts before this (ChunkWork::floor as the next event would
  // compute it, before its own message).
  common::Picoseconds Floor() const;

  // Prefetch hints for the network's scheduler, for a message with `tag`
  // it is about to deliver: stage 0 this object (both lines), 1 the list of
  // active collectives, 2 the collective's first line, 3 the message's
  // stream, 4 the stream's arrival slots. Stage k reads only what stage k-1
  // fetched (stages 0 and 1 ignore `tag`). No effect on results.
  static constexpr int kPrefetchStages = 5;
  void Prefetch(int stage, const MessageTag& tag) const;

  // Called by the network.
  // A message that may be processed from `start` on (before the now of a
  // later event: one arriving in packets, from its first one's arrival) holds
  // the floor of this device's events back to `start` until Release(start).
  void Hold(common::Picoseconds start);
  void Release(common::Picoseconds start);
  void OnMessage(const MessageTag& tag, int64_t bytes, common::Picoseconds head,
                 common::Picoseconds tail);
  void OnTimer(uint64_t token);

 private:
  struct Active;
  struct StreamState;
  Active* Find(uint32_t seq);
  void StartPhase(Active& a, int pipeline, common::Picoseconds at);
  void StartStream(Active& a, int stream, common::Picoseconds at);
  void Deliver(Active& a, const MessageTag& tag, int64_t bytes,
               common::Picoseconds head, common::Picoseconds tail);
  // Processes the stream's arrivals in step order while the next is there.
  // `fresh`: the step delivered by the current event (kStarting: the stream
  // starts now), which holds nothing; the others held the floor.
  static constexpr int kStarting = -2;
  void Drain(Active& a, int stream, int fresh);
  void StreamDone(Active& a, int stream, common::Picoseconds at);
  void SendChunk(int dst, int64_t bytes, const MessageTag& tag,
                 ChunkTiming ready);

  // Hot fields first (see the class comment). The active collectives with
  // their sequence numbers beside them, so that finding a message's
  // collective reads only this array (and the prefetch can find it early).
  struct ActiveRef {
    uint32_t seq;
    std::unique_ptr<Active> active;
  };
  static constexpr size_t kActiveReserve = 8;  // chosen: two lines
  std::vector<ActiveRef> active_;
  int device_;
  // The earliest starts of the messages received (or arriving) and not yet
  // processed that may start before a later event's now (Hold): what the
  // floor keeps back (ChunkWork::floor). floor_ is the current event's, for
  // every chunk it leads to.
  std::unique_ptr<absl::btree_multiset<int64_t>> held_;  // made at the first
  common::Picoseconds floor_ = common::Picoseconds(0);
  // Sets floor_ at the start of an event: now, or the earliest held head.
  void SetFloor();
  uint32_t next_seq_ = 0;
  CollectiveDataPath* data_path_;
  EndpointTransport* transport_;
  EndpointStats stats_;
  const Topology* topology_;
};

}  // namespace tpusim::sim::net

#endif  // TPUSIM_SIM_NET_COLLECTIVE_H_
