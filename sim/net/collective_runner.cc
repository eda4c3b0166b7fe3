#include "sim/net/collective_runner.h"

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tpusim::sim::net {

std::vector<int> AllDevices(const Topology& topology) {
  std::vector<int> devices(topology.num_devices());
  for (int d = 0; d < topology.num_devices(); ++d) devices[d] = d;
  return devices;
}

absl::StatusOr<std::vector<JobResult>> RunCollectives(
    KernelSession& session, Network& network,
    const std::vector<CollectiveJob>& jobs) {
  const common::Picoseconds now = session.Now();
  std::vector<JobResult> results(jobs.size());
  std::vector<std::vector<bool>> finished(jobs.size());
  absl::Status start_error = absl::OkStatus();
  for (size_t j = 0; j < jobs.size() && start_error.ok(); ++j) {
    results[j].start = now;
    results[j].end = now;
    results[j].device_end.assign(jobs[j].devices.size(), now);
    finished[j].assign(jobs[j].devices.size(), false);
    for (size_t i = 0; i < jobs[j].devices.size(); ++i) {
      const int device = jobs[j].devices[i];
      if (device < 0 || device >= network.topology().num_devices()) {
        start_error = absl::InvalidArgumentError(
            absl::StrCat("device ", device, " is not a device of ",
                         network.topology().name()));
        break;
      }
      start_error = network.endpoint(device).Start(
          jobs[j].request,
          [&results, &finished, j, i](const CollectiveResult& r) {
            results[j].device_end[i] = r.end;
            if (i == 0) results[j].algorithm = r.algorithm;
            finished[j][i] = true;
          });
      if (!start_error.ok()) break;
    }
  }
  TPUSIM_RETURN_IF_ERROR(session.RunUntilIdle().status());
  TPUSIM_RETURN_IF_ERROR(start_error);
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (size_t i = 0; i < jobs[j].devices.size(); ++i) {
      if (!finished[j][i]) {
        return absl::InternalError(absl::StrCat(
            "device ", jobs[j].devices[i],
            " did not finish its collective: a member of its group did not "
            "start it"));
      }
      if (results[j].end < results[j].device_end[i]) {
        results[j].end = results[j].device_end[i];
      }
    }
  }
  return results;
}

}  // namespace tpusim::sim::net
