// sim/net/collective_runner.h
//
// Drives collectives from outside the model, for the CLI, the benchmarks and
// the tests: starts each job's request on its devices at the current
// simulated time, runs the session until every device has finished, and
// reports the times. The pod does not use this; its chips start collectives
// from their own schedules.
//
//   TPUSIM_ASSIGN_OR_RETURN(std::vector<JobResult> r,
//       RunCollectives(*session, *network, {{request, all_devices}}));
//   r[0].end - r[0].start;   // the collective's time

#ifndef TPUSIM_SIM_NET_COLLECTIVE_RUNNER_H_
#define TPUSIM_SIM_NET_COLLECTIVE_RUNNER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "common/units.h"
#include "sim/kernel.h"
#include "sim/net/collective.h"
#include "sim/net/network.h"

namespace tpusim::sim::net {

struct CollectiveJob {
  CollectiveRequest request;
  std::vector<int> devices;  // the devices that start it
};

struct JobResult {
  common::Picoseconds start;
  common::Picoseconds end;                      // the last device's end
  std::vector<common::Picoseconds> device_end;  // by position in `devices`
  Algorithm algorithm = Algorithm::kAuto;       // of the first device
};

// Errors: a Start error (nothing of that job runs; jobs before it have
// started and are run to completion first), the session's errors, and
// Internal when a device never finishes (a group member did not start).
absl::StatusOr<std::vector<JobResult>> RunCollectives(
    KernelSession& session, Network& network,
    const std::vector<CollectiveJob>& jobs);

// Every device of the topology, in id order.
std::vector<int> AllDevices(const Topology& topology);

}  // namespace tpusim::sim::net

#endif  // TPUSIM_SIM_NET_COLLECTIVE_RUNNER_H_
