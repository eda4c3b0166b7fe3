// strategy/reduce.h
//
// ReduceOp, the `axis` argument of Strategy.reduce, and the host-side
// reduction rules of tf.distribute.Strategy.reduce (spec section (f)):
//
//   absl::StatusOr<Value> sum =
//       ReduceOnHost(ReduceOp::kSum, per_replica_losses, ReduceAxis(0),
//                    /*num_replicas_in_sync=*/8);
//
// TPUStrategy::Reduce checks the context and resolves variables, then calls
// ReduceOnHost. The in-program (replica context) all-reduce lives in
// ReplicaContext::AllReduce.
//
// tpusim choices (documented, tested):
// * Floating sums accumulate in double and round once to the output dtype
//   (TF accumulates in the dtype itself; results agree exactly for the small
//   integral values of the spec's examples). bf16 arithmetic computes in f32
//   and rounds to nearest even on output.
// * Integer sums wrap around in two's complement, as TF's integer kernels do:
//   int32 2147483647 + 1 = -2147483648, int64 likewise (common/int_math.h;
//   never signed-overflow UB). They accumulate in int64 with wrapping adds
//   and convert to the dtype with tf.cast's wrap, which gives exactly the
//   dtype's own wrapping sum (arithmetic modulo 2^bits).
// * MEAN with axis=None multiplies the sum by the dtype's rounding of 1/N (as
//   TF's `output *= 1. / len(values)`), it does not divide by N.
// * MEAN with an integer axis divides with tf.truediv's dtype table:
//   int32/int64 -> float64, uint8 -> float32 (TF's _TRUEDIV_TABLE), floats
//   keep their dtype.

#ifndef TPUSIM_STRATEGY_REDUCE_H_
#define TPUSIM_STRATEGY_REDUCE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "strategy/runtime/tensor.h"
#include "strategy/values.h"

namespace tpusim::strategy {

// tf.distribute.ReduceOp: exactly two members in TF 2.1/2.2.
enum class ReduceOp { kSum, kMean };

// "SUM" / "MEAN".
absl::string_view ReduceOpName(ReduceOp op);
// Case-insensitive lookup ("sum", "Mean"), as Strategy.reduce upper-cases
// strings. Any other name is kInvalidArgument ("'MAX' is not a valid ReduceOp",
// TF's enum lookup ValueError).
absl::StatusOr<ReduceOp> ReduceOpFromString(absl::string_view name);

// A reduce op given either as the enum or as a name (resolved when used, so
// that an unknown name is a Status, not a crash): Reduce(ReduceOp::kSum, ...),
// Reduce("mean", ...).
class ReduceOpArg {
 public:
  ReduceOpArg(ReduceOp op) : op_(op) {}           // NOLINT: implicit
  ReduceOpArg(const char* name) : name_(name) {}  // NOLINT: implicit
  ReduceOpArg(absl::string_view name)
      : name_(std::string(name)) {}                      // NOLINT: implicit
  ReduceOpArg(const std::string& name) : name_(name) {}  // NOLINT: implicit
  // The op; kInvalidArgument for an unknown name.
  absl::StatusOr<ReduceOp> Resolve() const;

 private:
  std::optional<ReduceOp> op_;
  std::string name_;
};

// The `axis` argument of Strategy.reduce: None (reduce across replicas only),
// one int, or a sequence of ints (SUM only; [] = no reduction along any axis).
class ReduceAxis {
 public:
  ReduceAxis() = default;  // None
  ReduceAxis(std::nullopt_t) {
  }  // NOLINT: implicit, so `std::nullopt` reads like Python's None
  ReduceAxis(int axis) : kind_(Kind::kInt), axes_{axis} {}  // NOLINT: implicit
  static ReduceAxis Sequence(std::vector<int> axes) {
    ReduceAxis a;
    a.kind_ = Kind::kSequence;
    a.axes_ = std::move(axes);
    return a;
  }

  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  // Precondition: is_int().
  int axis() const { return axes_.at(0); }
  // The axes (one for an int axis, none for None).
  const std::vector<int>& axes() const { return axes_; }
  // "None", "0", "[0, 1]".
  std::string ToString() const;

 private:
  enum class Kind { kNone, kInt, kSequence };
  Kind kind_ = Kind::kNone;
  std::vector<int> axes_;
};

// Strategy.reduce on host values for a strategy with `num_replicas_in_sync`
// replicas.
//
// `value` is a PerReplica or Mirrored value (its components are reduced), a
// plain tensor or a plain number. Mirrored variables must be resolved to
// Mirrored values by the caller (kInvalidArgument otherwise).
//
// Contract (spec (f); every error is kInvalidArgument and names the
// offending values):
// * axis None, distributed: SUM = elementwise sum of the components;
//   MEAN = that sum times 1/num_components. Components must agree in dtype
//   and shape. MEAN of integer components is an error. String tensors are an
//   error.
// * axis None, not distributed: a plain number equal to 0 gives
//   Value::Number(0); MEAN gives the value unchanged; SUM gives the value if
//   num_replicas_in_sync == 1, else an error ("A non-DistributedValues value
//   ... cannot be reduced with the given reduce op SUM").
// * axis given: a non-distributed tensor (or number) is treated as
//   replicated on every replica. SUM: per-component reduce_sum over the axes,
//   then the elementwise sum of the results (which must agree in shape).
//   MEAN (int axis only): sum of per-component sums divided by the sum of the
//   per-component sizes of `axis` (exact for partial and empty replicas).
//   Negative axes count from the end; out of range: "`axis` = k out of range
//   for `value` with rank r".
// Components without data (abstract tensors) give an abstract result of the
// right shape.
absl::StatusOr<Value> ReduceOnHost(ReduceOp op, const Value& value,
                                   const ReduceAxis& axis,
                                   int num_replicas_in_sync);

// reduce_sum of `tensor` over `axes` (negative axes count from the end;
// duplicates and out-of-range axes are kInvalidArgument). The result keeps the
// dtype; an empty `axes` returns the tensor unchanged.
absl::StatusOr<runtime::Tensor> ReduceSumAxes(const runtime::Tensor& tensor,
                                              absl::Span<const int> axes);

// Elementwise sum of equal-dtype, equal-shape tensors (tf.add_n).
// kInvalidArgument names the first mismatching component.
absl::StatusOr<runtime::Tensor> AddN(absl::Span<const runtime::Tensor> parts);

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_REDUCE_H_
