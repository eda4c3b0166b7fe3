// strategy/input_iterator.h
//
// InputIterator: the small interface TPUStrategy::ExperimentalRun and the
// steps_per_run runner pull their inputs from. Each GetNext() is one step:
// one element per replica. The distributed dataset's iterator adapts to it
// (strategy/distributed_input.h); VectorInputIterator serves tests and
// examples from memory.
//
//   // step0, step1: PerReplica<Nest<Tensor>>
//   VectorInputIterator it({step0, step1});
//   it.GetNext();  // step0, then step1, then kOutOfRange

#ifndef TPUSIM_STRATEGY_INPUT_ITERATOR_H_
#define TPUSIM_STRATEGY_INPUT_ITERATOR_H_

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "strategy/runtime/nest.h"
#include "strategy/runtime/tensor.h"
#include "strategy/values.h"

namespace tpusim::strategy {

using ReplicaElement = runtime::Nest<runtime::Tensor>;

class InputIterator {
 public:
  virtual ~InputIterator() = default;
  // The next step: component r is replica r's element (a replica without data
  // gets an empty dummy batch from the distributed iterator). kOutOfRange at
  // the end of the data; other errors of the input pipeline propagate
  // unchanged.
  virtual absl::StatusOr<PerReplica<ReplicaElement>> GetNext() = 0;
};

// Yields the given steps in order, then kOutOfRange.
class VectorInputIterator final : public InputIterator {
 public:
  explicit VectorInputIterator(std::vector<PerReplica<ReplicaElement>> steps)
      : steps_(std::move(steps)) {}
  absl::StatusOr<PerReplica<ReplicaElement>> GetNext() override {
    if (next_ >= steps_.size()) {
      return absl::OutOfRangeError(
          absl::StrCat("End of sequence (after ", steps_.size(), " steps)"));
    }
    return steps_[next_++];
  }

 private:
  std::vector<PerReplica<ReplicaElement>> steps_;
  size_t next_ = 0;
};

// The run() argument structure of one step: the structure of replica 0's
// element with every leaf replaced by the PerReplica of that leaf across
// replicas. kInvalidArgument when the replicas' structures differ (naming the
// replica) or `element` is empty. The element's host costs go with the first
// leaf (so a backend charges them once per replica).
absl::StatusOr<ValueNest> RegroupElement(
    const PerReplica<ReplicaElement>& element);

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_INPUT_ITERATOR_H_
