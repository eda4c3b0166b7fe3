// strategy/values.h
//
// Distributed values, as in tf.distribute: PerReplica<T> holds one component
// per replica, in replica order (component i belongs to replica i).
//
//   PerReplica<Tensor> ids = PerReplica<Tensor>::FromFn(
//       8, [](int replica) { return Tensor::Scalar<float>(replica); });
//
// The execution layer adds Mirrored values and mirrored variables here.

#ifndef TPUSIM_STRATEGY_VALUES_H_
#define TPUSIM_STRATEGY_VALUES_H_

#include <utility>
#include <vector>

#include "common/check.h"

namespace tpusim::strategy {

template <typename T>
class PerReplica {
 public:
  PerReplica() = default;
  explicit PerReplica(std::vector<T> values) : values_(std::move(values)) {}
  template <typename Fn>
  static PerReplica FromFn(int num_replicas, Fn&& fn) {
    std::vector<T> values;
    values.reserve(num_replicas);
    for (int r = 0; r < num_replicas; ++r) values.push_back(fn(r));
    return PerReplica(std::move(values));
  }

  int num_replicas() const { return static_cast<int>(values_.size()); }
  const T& operator[](int replica) const {
    TPUSIM_CHECK(replica >= 0 && replica < num_replicas()) << replica;
    return values_[replica];
  }
  T& operator[](int replica) {
    TPUSIM_CHECK(replica >= 0 && replica < num_replicas()) << replica;
    return values_[replica];
  }
  const std::vector<T>& values() const { return values_; }
  std::vector<T>& mutable_values() { return values_; }

 private:
  std::vector<T> values_;
};

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_VALUES_H_
