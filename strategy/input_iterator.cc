#include "strategy/input_iterator.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tpusim::strategy {

absl::StatusOr<ValueNest> RegroupElement(
    const PerReplica<ReplicaElement>& element) {
  if (element.num_replicas() == 0) {
    return absl::InvalidArgumentError(
        "RegroupElement: the element has no replicas");
  }
  const ReplicaElement& first = element[0];
  const int num_leaves = first.num_leaves();
  std::vector<std::vector<runtime::Tensor>> per_leaf(num_leaves);
  for (int r = 0; r < element.num_replicas(); ++r) {
    if (!element[r].SameStructure(first)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input element structures differ across replicas: replica 0 has ",
          first.StructureString(), ", replica ", r, " has ",
          element[r].StructureString()));
    }
    std::vector<const runtime::Tensor*> leaves = element[r].Flatten();
    for (int i = 0; i < num_leaves; ++i) per_leaf[i].push_back(*leaves[i]);
  }
  std::vector<Value> values;
  values.reserve(num_leaves);
  for (auto& parts : per_leaf) {
    PerReplica<runtime::Tensor> leaf(std::move(parts));
    // The step's host costs travel once, with its first leaf.
    if (values.empty()) leaf.set_host_costs(element.host_costs());
    values.emplace_back(std::move(leaf));
  }
  return first.Unflatten(std::move(values));
}

}  // namespace tpusim::strategy
