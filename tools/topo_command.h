// tools/topo_command.h
//
// `tpusim topo SLICE [--device-assignment=SPEC] [--format=text|svg]`: draws a
// slice's torus — the chips at their coordinates, the host owning each, the
// wraparound links — and which replica and logical core of a device
// assignment sits on each TensorCore.
//
// SPEC is one of
//   shape=AxBxC[,stride=AxBxC][,replicas=N]   DeviceAssignment.build(topology,
//                                             computation_shape, stride, N);
//                                             as many entries as the topology's
//                                             rank (3 for v2/v3/v5e/v6e, 4 for
//                                             v4/v5p); replicas defaults to 1
//   cores=[[[x,y,c],...],...]                 an explicit core assignment
//                                             [replica][logical core][coords]
// Without --device-assignment the placement is TPUStrategy's default: one
// core per replica, replica r on device r.

#ifndef TPUSIM_TOOLS_TOPO_COMMAND_H_
#define TPUSIM_TOOLS_TOPO_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "strategy/device_assignment.h"
#include "strategy/runtime/slice.h"
#include "tools/cli.h"

namespace tpusim::tools {

Subcommand TopoCommand();

// The device assignment SPEC above on `layout`'s topology. InvalidArgument
// names the spec and what is wrong; DeviceAssignment's own errors (TF's
// messages) are passed on with the spec as context.
absl::StatusOr<strategy::DeviceAssignment> ParseDeviceAssignmentSpec(
    const runtime::SliceLayout& layout, absl::string_view spec);

// Where each replica's logical cores sit: [replica][logical core] -> device
// id. Without an assignment, replica r is device r with one core.
struct Placement {
  int num_replicas = 0;
  int cores_per_replica = 1;
  std::vector<std::vector<int>> replica_devices;
  // [device id] -> "r<replica>" or "r<replica>.<core>", "" when unused.
  std::vector<std::string> device_label;
};
absl::StatusOr<Placement> PlaceReplicas(
    const runtime::SliceLayout& layout,
    const strategy::DeviceAssignment* assignment);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_TOPO_COMMAND_H_
