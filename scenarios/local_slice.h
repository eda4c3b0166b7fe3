// scenarios/local_slice.h
//
// A small, local resolver from a slice name ("v3-32", "v4-16", "v5litepod-16",
// "v6e-8") to the input layout a scenario needs: the number of hosts (input
// workers) and devices (replicas) per host.
//
//   TPUSIM_ASSIGN_OR_RETURN(LocalSliceLayout layout,
//   ResolveSliceNameLocally("v3-32"));
//   // layout.hosts == 4, layout.devices_per_host == 8
//
// TODO(lead): MERGE POINT. This is a stand-in for the TOPOLOGY team's slice
// parsing (strategy/runtime/slice.cmake). At merge, replace the body of
// ResolveSliceNameLocally with a call into that code (hosts = number of tasks,
// devices_per_host = TPU devices per task) and delete this file; the only
// caller is scenarios/scenario_loader.cc (ResolveCluster).

#ifndef TPUSIM_SCENARIOS_LOCAL_SLICE_H_
#define TPUSIM_SCENARIOS_LOCAL_SLICE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/runtime/tpu_generation.h"

namespace tpusim::scenarios {

struct LocalSliceLayout {
  const runtime::TpuGeneration* generation = nullptr;
  int chips = 0;
  int hosts = 0;
  int devices_per_host = 0;
};

// Resolves "<prefix>-<count>" over strategy/runtime/tpu_generation.h: for
// v2/v3/v4/v5p the count is TensorCores (chips = count / cores_per_chip), for
// v5litepod/v6e it is chips (spec "tpusim conventions", slice names). hosts =
// ceil(chips / chips_per_host); devices per host = devices_per_chip *
// min(chips, chips_per_host). InvalidArgument names the slice and says what is
// wrong: unknown prefix (lists the valid ones), a count that is not a positive
// integer, not a whole number of chips, not a whole number of hosts when larger
// than one host, or larger than the generation's biggest slice.
absl::StatusOr<LocalSliceLayout> ResolveSliceNameLocally(
    absl::string_view slice);

}  // namespace tpusim::scenarios

#endif  // TPUSIM_SCENARIOS_LOCAL_SLICE_H_
