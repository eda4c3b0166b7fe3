// sim/xla/hlo_module.h
//
// The subset of XLA's HloModuleProto that tpusim reads from a compiled module
// (the optimized, scheduled program libtpu returns), decoded by hand from the
// published field numbers (xla/service/hlo.proto, xla/xla_data.proto; tpusim
// does not build XLA's protos): an interchange format, like the TFRecord and
// ConfigProto formats elsewhere in tpusim. Unknown fields are skipped.
//
//   TPUSIM_ASSIGN_OR_RETURN(HloModule m,
//                           ParseHloModule(bytes, "hlo_with_config"));
//   const HloComputation& entry = *m.Entry();
//   for (int64_t id : m.EntrySequence()) { const HloInstruction& i = ... }
//
// Field numbers used:
//   HloModuleProtoWithConfig: hlo_module = 1
//   HloModuleProto: name = 1, entry_computation_name = 2, computations = 3,
//     id = 5, entry_computation_id = 6, schedule = 7
//   HloScheduleProto: sequences = 1 (map<int64, InstructionSequence>: key = 1,
//     value = 2); InstructionSequence: instruction_ids = 1
//   HloComputationProto: name = 1, instructions = 2, id = 5, root_id = 6
//   HloInstructionProto: name = 1, opcode = 2, shape = 3, parameter_number = 9,
//     fusion_kind = 11, tuple_index = 13, dimensions = 14, window = 15,
//     convolution_dimension_numbers = 16, channel_id = 26,
//     custom_call_target = 28, dot_dimension_numbers = 30, id = 35,
//     sharding = 40 (its presence only),
//     operand_ids = 36, called_computation_ids = 38, replica_groups = 49,
//     feature_group_count = 50, source_target_pairs = 52,
//     batch_group_count = 58, collective_device_list = 87
//   Window: dimensions = 1; WindowDimension: size = 1, stride = 2,
//     padding_low = 3, window_dilation = 5, base_dilation = 6
//   ConvolutionDimensionNumbers: kernel_input_feature_dimension = 3,
//     kernel_output_feature_dimension = 4, kernel_spatial_dimensions = 6,
//     input_spatial_dimensions = 11, output_spatial_dimensions = 12
//   ShapeProto: element_type = 2, dimensions = 3, tuple_shapes = 4, layout = 5
//   LayoutProto: minor_to_major = 1, tiles = 6, element_size_in_bits = 7,
//     memory_space = 8; TileProto: dimensions = 1
//   ReplicaGroup: replica_ids = 1; SourceTarget: source = 1, target = 2
//   CollectiveDeviceListProto: replica_groups = 1, iota_replica_group_list = 2
//   IotaReplicaGroupListProto: num_replica_groups = 1,
//     num_devices_per_group = 2, iota_reshape_dims = 3, iota_transpose_perm = 4
//   DotDimensionNumbers: lhs_contracting = 1, rhs_contracting = 2,
//     lhs_batch = 3, rhs_batch = 4
//   Window: dimensions = 1; WindowDimension: size = 1
//   ConvolutionDimensionNumbers: kernel_input_feature_dimension = 3,
//     kernel_output_feature_dimension = 4, kernel_spatial_dimensions = 6
//
// Errors: InvalidArgument for bytes that are not a well-formed message of
// that schema (naming the message and the field), for a format other than
// "hlo" and "hlo_with_config", for a module without computations or whose
// entry computation is missing, and for an operand or called computation id
// that is not in the module (naming the instruction).

#ifndef TPUSIM_SIM_XLA_HLO_MODULE_H_
#define TPUSIM_SIM_XLA_HLO_MODULE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tpusim::sim::xla {

// xla.PrimitiveType values tpusim names (xla_data.proto).
enum HloElementType : int {
  kPred = 1, kS8 = 2, kS16 = 3, kS32 = 4, kS64 = 5, kU8 = 6, kU16 = 7,
  kU32 = 8, kU64 = 9, kF16 = 10, kF32 = 11, kF64 = 12, kTuple = 13,
  kOpaque = 14, kC64 = 15, kBF16 = 16, kToken = 17, kC128 = 18,
};

struct HloShape {
  int element_type = 0;
  std::vector<int64_t> dimensions;
  std::vector<HloShape> tuple_shapes;
  // Layout (empty when the shape has none).
  std::vector<int64_t> minor_to_major;
  std::vector<std::vector<int64_t>> tiles;
  int64_t element_size_in_bits = 0;
  int64_t memory_space = 0;

  bool is_tuple() const { return element_type == kTuple; }
  int64_t ElementCount() const;
  // "f32[128,512]" / "(f32[4], bf16[2,2])".
  std::string ToString() const;
};

// Bits of one element of `type`; 0 for tuple, token and unknown types.
int ElementBits(int type);
// "f32", "bf16", "pred", ... ("type<N>" for others).
std::string ElementTypeName(int type);

struct HloInstruction {
  int64_t id = 0;
  std::string name;
  std::string opcode;
  HloShape shape;
  std::vector<int64_t> operand_ids;
  std::vector<int64_t> called_computation_ids;
  int64_t parameter_number = 0;
  int64_t tuple_index = 0;
  std::string fusion_kind;  // "kLoop", "kOutput", ... (fusion only)
  std::string custom_call_target;
  std::vector<int64_t> dimensions;
  int64_t channel_id = 0;
  // Collectives: replica groups, expanded (an iota list is materialised).
  std::vector<std::vector<int64_t>> replica_groups;
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;
  // dot
  std::vector<int64_t> lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
  // convolution
  std::vector<int64_t> window_sizes;
  // Per window dimension (absent in the proto: stride and dilations 1).
  struct WindowDim {
    int64_t size = 1;
    int64_t stride = 1;
    int64_t padding_low = 0;
    int64_t window_dilation = 1;
    int64_t base_dilation = 1;
  };
  std::vector<WindowDim> window;
  int64_t kernel_input_feature_dimension = 0;  // proto3: absent = 0
  int64_t kernel_output_feature_dimension = 0;
  std::vector<int64_t> kernel_spatial_dimensions;
  std::vector<int64_t> input_spatial_dimensions;
  std::vector<int64_t> output_spatial_dimensions;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
  // The instruction carries a sharding (HloInstructionProto.sharding): the
  // module is meant to be SPMD-partitioned.
  bool has_sharding = false;
};

struct HloComputation {
  int64_t id = 0;
  std::string name;
  int64_t root_id = -1;
  std::vector<HloInstruction> instructions;
  // Index into `instructions` of each id.
  std::map<int64_t, int> index;

  const HloInstruction* Find(int64_t id) const;
  const HloInstruction* root() const { return Find(root_id); }
};

struct HloModule {
  std::string name;
  std::string entry_computation_name;
  int64_t entry_computation_id = -1;
  std::vector<HloComputation> computations;
  // HloModuleProto.schedule: computation id -> instruction ids in order.
  std::map<int64_t, std::vector<int64_t>> schedule;

  const HloComputation* Entry() const;
  const HloComputation* FindComputation(int64_t id) const;
  // The entry computation's instruction ids in execution order: the module's
  // schedule when it has one for the entry, the instruction order otherwise.
  std::vector<int64_t> EntrySequence() const;
  bool has_entry_schedule() const;
};

// `format`: "hlo" (HloModuleProto) or "hlo_with_config"
// (HloModuleProtoWithConfig, what PJRT_Executable_OptimizedProgram gives).
absl::StatusOr<HloModule> ParseHloModule(absl::string_view bytes,
                                         absl::string_view format);

}  // namespace tpusim::sim::xla

#endif  // TPUSIM_SIM_XLA_HLO_MODULE_H_
