// strategy/values.h
//
// Distributed values, as in tf.distribute.
//
// * PerReplica<T> holds one component per replica, in replica order
//   (component i belongs to replica i): what a distributed iterator yields
//   and what run() returns.
// * Mirrored<T> holds N copies that are meant to be equal (one per replica
//   device).
// * Value is one leaf of the structures that TPUStrategy::Run takes and
//   returns and that Reduce / ExperimentalLocalResults accept: a plain
//   (non-distributed) tensor, a plain Python-like number, a PerReplica or
//   Mirrored tensor, or a mirrored variable (or one of its components).
//
//   PerReplica<Tensor> ids = PerReplica<Tensor>::FromFn(
//       8, [](int replica) { return Tensor::Scalar<float>(replica); });
//   Value v = ids;  // a distributed leaf
//   ValueNest args = ValueNest::Tuple({v, Value(Tensor::Scalar<float>(1.f))});

#ifndef TPUSIM_STRATEGY_VALUES_H_
#define TPUSIM_STRATEGY_VALUES_H_

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/units.h"
#include "strategy/runtime/nest.h"
#include "strategy/runtime/tensor.h"

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

  // tpusim extension: the host CPU time that produced each component (an
  // input pipeline's declared costs; data::DistributedIterator::GetNext sets
  // it). Empty, or one entry per replica. run() hands it to the backend with
  // the transfer (runtime::TransferOptions::host_cost), where a timing
  // backend's host model charges it.
  const std::vector<common::Picoseconds>& host_costs() const {
    return host_costs_;
  }
  void set_host_costs(std::vector<common::Picoseconds> costs) {
    TPUSIM_CHECK(costs.empty() || costs.size() == values_.size())
        << costs.size() << " host costs for " << values_.size() << " replicas";
    host_costs_ = std::move(costs);
  }

 private:
  std::vector<T> values_;
  std::vector<common::Picoseconds> host_costs_;
};

// N components that hold the same value, one per replica device
// (tf.distribute's Mirrored). Inside run() every replica sees its own
// component.
template <typename T>
class Mirrored {
 public:
  Mirrored() = default;
  explicit Mirrored(std::vector<T> values) : values_(std::move(values)) {}
  // N copies of `value`.
  static Mirrored Replicate(int num_replicas, const T& value) {
    return Mirrored(std::vector<T>(num_replicas, value));
  }

  int num_replicas() const { return static_cast<int>(values_.size()); }
  const T& operator[](int replica) const {
    TPUSIM_CHECK(replica >= 0 && replica < num_replicas()) << replica;
    return values_[replica];
  }
  const std::vector<T>& values() const { return values_; }

 private:
  std::vector<T> values_;
};

class MirroredVariable;  // strategy/variables.h

// One leaf of a run() argument or result structure. See the file comment.
class Value {
 public:
  enum class Kind {
    kTensor,  // a plain tensor: the same object for every replica
    kNumber,  // a plain (non-tensor) number, like a Python float; reduce treats
              // 0 specially
    kPerReplica,  // one tensor per replica
    kMirrored,    // one equal tensor per replica
    kVariable,    // a mirrored variable (component() == -1) or one of its
                  // components
  };

  // A plain number 0 (the default leaf).
  Value() = default;
  Value(runtime::Tensor tensor)  // NOLINT: implicit by design
      : kind_(Kind::kTensor), tensor_(std::move(tensor)) {}
  Value(PerReplica<runtime::Tensor> per_replica)  // NOLINT: implicit by design
      : kind_(Kind::kPerReplica),
        components_(std::move(per_replica.mutable_values())),
        host_costs_(per_replica.host_costs()) {}
  Value(Mirrored<runtime::Tensor> mirrored)  // NOLINT: implicit by design
      : kind_(Kind::kMirrored), components_(mirrored.values()) {}
  // The whole mirrored variable (component = -1) or its component `component`.
  explicit Value(const MirroredVariable* variable, int component = -1)
      : kind_(Kind::kVariable), variable_(variable), component_(component) {}
  // A plain float (like a Python float).
  static Value Number(double number) {
    Value v;
    v.kind_ = Kind::kNumber;
    v.number_ = number;
    return v;
  }
  // A plain integer (like a Python int): Value::Number(3). Chosen over the
  // double overload for every integral type but bool.
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                             int> = 0>
  static Value Number(T integer) {
    Value v;
    v.kind_ = Kind::kNumber;
    v.integer_ = static_cast<int64_t>(integer);
    v.number_ = static_cast<double>(integer);
    v.is_integer_ = true;
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_per_replica() const { return kind_ == Kind::kPerReplica; }
  bool is_mirrored() const { return kind_ == Kind::kMirrored; }
  bool is_variable() const { return kind_ == Kind::kVariable; }
  // PerReplica, Mirrored and a whole mirrored variable are tf.distribute
  // DistributedValues.
  bool is_distributed() const {
    return kind_ == Kind::kPerReplica || kind_ == Kind::kMirrored ||
           (kind_ == Kind::kVariable && component_ < 0);
  }

  // Precondition: is_tensor().
  const runtime::Tensor& tensor() const {
    TPUSIM_CHECK(is_tensor());
    return tensor_;
  }
  // Precondition: is_number().
  double number() const {
    TPUSIM_CHECK(is_number());
    return number_;
  }
  // Whether the plain number is an integer (Value::Number(3), not 3.0).
  // Precondition: is_number().
  bool is_integer() const {
    TPUSIM_CHECK(is_number());
    return is_integer_;
  }
  // The tensor TF makes of the plain number (convert_to_tensor): an integer is
  // int32 when it fits, else int64; a float is float32. Precondition:
  // is_number().
  runtime::Tensor NumberTensor() const {
    TPUSIM_CHECK(is_number());
    if (!is_integer_) {
      return runtime::Tensor::Scalar<float>(static_cast<float>(number_));
    }
    if (integer_ >= std::numeric_limits<int32_t>::min() &&
        integer_ <= std::numeric_limits<int32_t>::max()) {
      return runtime::Tensor::Scalar<int32_t>(static_cast<int32_t>(integer_));
    }
    return runtime::Tensor::Scalar<int64_t>(integer_);
  }
  // The components of a PerReplica or Mirrored value. Precondition:
  // is_per_replica() || is_mirrored().
  const std::vector<runtime::Tensor>& components() const {
    TPUSIM_CHECK(is_per_replica() || is_mirrored());
    return components_;
  }
  int num_components() const { return static_cast<int>(components_.size()); }
  // A PerReplica value's host costs (PerReplica::host_costs; empty for every
  // other kind).
  const std::vector<common::Picoseconds>& host_costs() const {
    return host_costs_;
  }
  // Precondition: is_variable().
  const MirroredVariable* variable() const {
    TPUSIM_CHECK(is_variable());
    return variable_;
  }
  // -1 for the whole variable, else the component index. Precondition:
  // is_variable().
  int component() const {
    TPUSIM_CHECK(is_variable());
    return component_;
  }

  // "PerReplica{float32[]{1}, float32[]{2}}", "float32[2]{1, 2}", "0",
  // "MirroredVariable".
  std::string DebugString() const {
    switch (kind_) {
      case Kind::kTensor:
        return tensor_.DebugString();
      case Kind::kNumber:
        return is_integer_ ? absl::StrCat(integer_) : absl::StrCat(number_);
      case Kind::kPerReplica:
      case Kind::kMirrored: {
        std::string out =
            kind_ == Kind::kPerReplica ? "PerReplica{" : "Mirrored{";
        for (size_t i = 0; i < components_.size(); ++i) {
          absl::StrAppend(&out, i == 0 ? "" : ", ",
                          components_[i].DebugString());
        }
        return absl::StrCat(out, "}");
      }
      case Kind::kVariable:
        return component_ < 0
                   ? std::string("MirroredVariable")
                   : absl::StrCat("MirroredVariable component ", component_);
    }
    return "?";
  }

  // Same kind and equal payload (tensors compared with Tensor's operator==).
  friend bool operator==(const Value& a, const Value& b) {
    return a.kind_ == b.kind_ && a.tensor_ == b.tensor_ &&
           a.number_ == b.number_ && a.integer_ == b.integer_ &&
           a.is_integer_ == b.is_integer_ && a.components_ == b.components_ &&
           a.variable_ == b.variable_ && a.component_ == b.component_;
  }
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  Kind kind_ = Kind::kNumber;
  runtime::Tensor tensor_;
  double number_ = 0;
  int64_t integer_ = 0;  // the integer when is_integer_
  bool is_integer_ = false;
  std::vector<runtime::Tensor> components_;
  std::vector<common::Picoseconds> host_costs_;  // kPerReplica only
  const MirroredVariable* variable_ = nullptr;
  int component_ = -1;
};

using ValueNest = runtime::Nest<Value>;

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_VALUES_H_
