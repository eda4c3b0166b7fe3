// strategy/runtime/pjrt/compile_options.h
//
// A serialized xla.CompileOptionsProto, encoded by hand (tpusim does not build
// XLA's protos) from the published field numbers:
//   CompileOptionsProto.executable_build_options = 3
//   ExecutableBuildOptionsProto: device_ordinal = 1, num_replicas = 4,
//     num_partitions = 5, use_spmd_partitioning = 6, device_assignment = 9,
//     use_shardy_partitioner = 19
//   DeviceAssignmentProto: replica_count = 1, computation_count = 2,
//     computation_devices = 3 (ComputationDevice.replica_device_ids = 1)
// An empty CompileOptionsProto makes XLA's plugins fail, so replicas and
// partitions are always set.
//
//   std::string bytes = EncodeCompileOptions({{0}, {1}});  // 2 replicas

#ifndef TPUSIM_STRATEGY_RUNTIME_PJRT_COMPILE_OPTIONS_H_
#define TPUSIM_STRATEGY_RUNTIME_PJRT_COMPILE_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::runtime::pjrt {

// replica_partition_devices[r][p]: the plugin device id of replica r,
// partition p. Precondition: non-empty, every row the same length.
// `use_spmd_partitioning`: the compiler partitions the module by its
// shardings over the partitions (SPMD), as JAX compiles a sharded jit;
// `use_shardy_partitioner`: the shardings are Shardy's (`sdy.sharding`).
std::string EncodeCompileOptions(
    const std::vector<std::vector<int64_t>>& replica_partition_devices,
    bool use_spmd_partitioning = false, bool use_shardy_partitioner = false);

}  // namespace tpusim::runtime::pjrt

#endif  // TPUSIM_STRATEGY_RUNTIME_PJRT_COMPILE_OPTIONS_H_
