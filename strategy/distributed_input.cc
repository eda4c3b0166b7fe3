#include "strategy/distributed_input.h"

#include "common/status_macros.h"

namespace tpusim::strategy {

absl::StatusOr<std::unique_ptr<DistributedInputIterator>>
DistributedInputIterator::Create(const data::DistributedDataset& dataset) {
  TPUSIM_ASSIGN_OR_RETURN(data::DistributedIterator it, dataset.MakeIterator());
  return std::make_unique<DistributedInputIterator>(std::move(it));
}

}  // namespace tpusim::strategy
