#include "strategy/runtime/pjrt/compile_options.h"

namespace tpusim::runtime::pjrt {
namespace {

void Varint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Wire types: 0 varint, 2 length-delimited.
void Tag(int field, int wire, std::string* out) {
  Varint((static_cast<uint64_t>(field) << 3) | wire, out);
}

void IntField(int field, int64_t v, std::string* out) {
  Tag(field, 0, out);
  Varint(static_cast<uint64_t>(v), out);  // negative: 10-byte two's complement
}

void BytesField(int field, const std::string& bytes, std::string* out) {
  Tag(field, 2, out);
  Varint(bytes.size(), out);
  out->append(bytes);
}

}  // namespace

std::string EncodeCompileOptions(
    const std::vector<std::vector<int64_t>>& replica_partition_devices,
    bool use_spmd_partitioning, bool use_shardy_partitioner) {
  const int64_t replicas = static_cast<int64_t>(replica_partition_devices.size());
  const int64_t partitions =
      static_cast<int64_t>(replica_partition_devices[0].size());
  std::string assignment;
  IntField(1, replicas, &assignment);    // replica_count
  IntField(2, partitions, &assignment);  // computation_count
  for (int64_t p = 0; p < partitions; ++p) {
    std::string ids;
    for (int64_t r = 0; r < replicas; ++r) {
      Varint(static_cast<uint64_t>(replica_partition_devices[r][p]), &ids);
    }
    std::string computation;
    BytesField(1, ids, &computation);  // replica_device_ids, packed
    BytesField(3, computation, &assignment);  // computation_devices
  }
  std::string build;
  IntField(1, -1, &build);          // device_ordinal: none (an assignment is given)
  IntField(4, replicas, &build);    // num_replicas
  IntField(5, partitions, &build);  // num_partitions
  if (use_spmd_partitioning) IntField(6, 1, &build);  // use_spmd_partitioning
  BytesField(9, assignment, &build);  // device_assignment
  if (use_shardy_partitioner) IntField(19, 1, &build);  // use_shardy_partitioner
  std::string options;
  BytesField(3, build, &options);  // executable_build_options
  return options;
}

}  // namespace tpusim::runtime::pjrt
