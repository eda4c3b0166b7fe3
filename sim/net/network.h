// sim/net/network.h
//
// The SystemC model of the ICI network: one node per chip, each with its
// outgoing links (one per torus neighbour and direction, plus the on-chip
// core-to-core path on v2/v3), its own event queue and one CollectiveEndpoint
// per device, and one SystemC process (the network's scheduler) that runs
// the chips.
//
//   std::unique_ptr<Network> net;
//   TPUSIM_ASSIGN_OR_RETURN(auto session, KernelSession::Create([&] {
//     TPUSIM_ASSIGN_OR_RETURN(net, Network::Create(topology, config));
//     return absl::OkStatus();
//   }));
//   net->endpoint(0).Start(request, on_done);   // for every member
//   session->RunUntilIdle();
//
// How time is kept (architecture.md "Built to be partitioned"):
// * integer picoseconds (the kernel's resolution is 1 ps);
// * each chip has its own event queue ordered by the fixed key (time, input
//   port, message id); same-time events never depend on insertion or
//   scheduling order;
// * chips interact only through link messages, which arrive at least one hop
//   latency (> 0) after they leave, so a chip's events at time t are all known
//   before it runs at t, and chips due at the same time cannot affect each
//   other;
// * the scheduler (one SC_METHOD) keeps a calendar of (time, chip) wake-ups
//   and is woken by SystemC only at the next time some chip has work; it then
//   runs every chip due, in chip order (a fixed choice; by the rule above the
//   order cannot change a result). A partitioned run gives each rank such a
//   scheduler over the chips it owns;
// * with NetworkOptions::threads > 1 the chips of one time (when at least
//   128 are due) run on several threads at once: the chip-ordered batch is
//   cut into one contiguous slice per thread, each run by one thread (a
//   worker's slice by the SystemC thread when that worker is late). A slice
//   owns its chip ids and those up to the next slice. A chip's run writes
//   only its own state and the queues of chips its slice owns; what reaches
//   further waits: a packet for a chip another slice owns goes to that
//   chip's inbox (taken into its queue when it next runs; it is due at least
//   one hop latency after now, so no run at this time needs it), calendar
//   wake-ups go to per-slice lists merged after the batch, and collective
//   done callbacks run after the batch on the SystemC thread, in chip order
//   (so also with one thread). Queues order by the total key (time, port,
//   id, sub; no two events of a chip share one), so the order packets reach
//   a queue cannot matter: every thread count gives identical results
//   (tested);
// * statistics are kept per link and per endpoint and read in chip order.
//
// Links (tpusim's model):
// * A link serves one packet at a time at B (NetConfig). Packets waiting for a
//   busy link queue per input port (the direction they came from, the on-chip
//   path, or a local device); when it frees up the link takes them
//   round-robin between ports, FIFO within a port, so flows that share a link
//   share its bandwidth packet by packet. An idle link starts the first packet
//   that reaches it at once (at equal times, in the fixed key order).
// * Cut-through: a packet starts on the next hop one hop latency after it
//   started on this one, and cannot finish there before its last byte has
//   arrived (finish = max(start + bytes/B, tail arrival)).
// * The packet size is NetConfig::packet_bytes; 0 sends each message as one
//   packet (the fast default; see docs/collectives.md for its error against 4 KiB
//   packets).
// * Both cores of a v2/v3 chip use all of the chip's ICI links (tpusim
//   choice); messages between the two cores of one chip take the on-chip path.

#ifndef TPUSIM_SIM_NET_NETWORK_H_
#define TPUSIM_SIM_NET_NETWORK_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/units.h"
#include "sim/net/collective.h"
#include "sim/net/net_config.h"
#include "sim/net/topology.h"

namespace tpusim::sim::net {

class ChipNode;
class NetScheduler;

struct NetworkOptions {
  // Name of the network's SystemC module (its scheduler), so that several
  // networks can be elaborated side by side.
  std::string name = "ici";
  // Allocate the chips' endpoints and queues in reverse id order (a
  // determinism check: the results must not depend on it).
  bool reverse_construction = false;
  // The data path of every device; nullptr uses a VectorRateDataPath owned by
  // the network.
  CollectiveDataPath* data_path = nullptr;
  // Threads that run the chips due at one time (the SystemC thread and
  // threads - 1 workers owned by the network); 0 = one per hardware thread.
  // Results are identical for every value. Allowed: 0..1024.
  int threads = 1;
};

// Counters of one link. `dir` is the direction (0..5, see topology.h), or
// 6 for the on-chip path from core 0 to core 1 and 7 for core 1 to core 0.
struct LinkStats {
  int chip = 0;
  int dir = 0;
  int64_t packets = 0;
  int64_t bytes = 0;
  common::Picoseconds busy;  // time the link was occupied
  int64_t peak_queue = 0;    // most packets waiting for it at once
};

class Network {
 public:
  // Builds the modules; call it while elaborating (inside
  // KernelSession::Create). Errors: the config's (ValidateNetConfig);
  // InvalidArgument for options.threads outside 0..1024; FailedPrecondition
  // when the kernel is not elaborating.
  static absl::StatusOr<std::unique_ptr<Network>> Create(
      const Topology& topology, const NetConfig& config,
      NetworkOptions options = {});
  ~Network();

  const Topology& topology() const { return topology_; }
  const NetConfig& config() const { return config_; }
  CollectiveEndpoint& endpoint(int device) { return *endpoints_[device]; }
  // Every existing link, chip by chip, directions in order, then the on-chip
  // paths.
  std::vector<LinkStats> Links() const;
  // Sum over chips of the chips' event-queue events handled (a speed
  // figure).
  int64_t events() const;
  // SystemC activations of the network's process (one per distinct time
  // with work, plus delta wake-ups).
  int64_t activations() const;
  // Sum over chips of the times a chip ran its queue (one per chip and time,
  // plus one more when a done callback gives it work at that time).
  int64_t chip_runs() const;
  // Threads the chips run on (options.threads, 0 resolved).
  int threads() const;
  // Batches of chips run on more than one thread.
  int64_t parallel_batches() const;
  // The default data path (nullptr when the options gave one).
  const VectorRateDataPath* default_data_path() const {
    return default_data_path_.get();
  }

 private:
  Network(const Topology& topology, const NetConfig& config);
  Topology topology_;
  NetConfig config_;
  std::unique_ptr<VectorRateDataPath> default_data_path_;
  std::unique_ptr<NetScheduler> scheduler_;
  std::vector<ChipNode> chips_;                   // by chip id
  std::vector<CollectiveEndpoint*> endpoints_;    // by device id
};

}  // namespace tpusim::sim::net

#endif  // TPUSIM_SIM_NET_NETWORK_H_
