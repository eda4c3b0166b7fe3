// strategy/runtime/program.h
//
// Program: the traced per-replica computation, an SSA list of ops with typed
// values, and ProgramBuilder, the API the tracer (ReplicaContext) records ops
// with.
//
//   ProgramBuilder b("step", /*num_replicas=*/8);
//   // f32[<=8,4]: a dynamic batch of at most 8 rows.
//   Value x = *b.Parameter(DType::kF32, Shape({8, 4}), /*dynamic_dims=*/0b1);
//   TPUSIM_RETURN_IF_ERROR(
//       b.DeclareVariable(/*slot=*/0, DType::kF32, Shape({4, 3}), "w"));
//   Value w = *b.VariableRead(0);
//   Value y = *b.MatMul(x, w);  // f32[<=8,3]
//   Value s = *b.AllReduce(*b.ReduceSum(y, {0}), CollectiveReduce::kSum);
//   absl::StatusOr<Program> program = std::move(b).Build({s});
//
// Every op yields exactly one value; a Value is the index of the op that
// produced it. One traced program serves every replica (replica_id() tells them
// apart). Builder methods run the op's shape rule and return InvalidArgument
// (naming the op, the operand types and what is allowed) instead of recording a
// malformed op; a failed call leaves the builder unchanged.
//
// Placement for model parallelism: every op carries a `logical_core` in
// [0, num_cores_per_replica), set from the builder's current core
// (set_logical_core). A backend runs each op on the device of its logical core
// in the replica's device list; values used on another core are transferred
// there (the host backend counts those bytes in the profile as
// cross_core_bytes). Collectives on core c communicate between the core-c
// devices of the replicas. Variable ops on core c read and write the variable
// storage of the replica's core-c device.
//
// Programs serialize to tpusim.proto.ProgramProto (ToProto / FromProto, which
// re-runs every shape rule) and print as HLO-like text (ToText), one op per
// line with its type:
//   %2 = f32[<=8,3] dot(%0, %1), lhs_contracting={1}, rhs_contracting={0}

#ifndef TPUSIM_STRATEGY_RUNTIME_PROGRAM_H_
#define TPUSIM_STRATEGY_RUNTIME_PROGRAM_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "strategy/runtime/ops.h"
#include "strategy/runtime/tensor.h"

namespace tpusim::proto {
class ProgramProto;
}  // namespace tpusim::proto

namespace tpusim::runtime {

// A handle to an SSA value of one ProgramBuilder / Program (the index of its
// defining op).
struct Value {
  int id = -1;
  bool valid() const { return id >= 0; }
  friend bool operator==(Value a, Value b) { return a.id == b.id; }
  friend bool operator!=(Value a, Value b) { return a.id != b.id; }
};

// One recorded op. `operands` are value ids of earlier ops.
struct Op {
  OpCode code = OpCode::kConstant;
  std::vector<int> operands;
  OpAttrs attrs;
  ValueType type;  // the result type (bounds for dynamic dims)
  int logical_core = 0;
};

// A variable the program reads or writes: backends keep one buffer per (device,
// slot).
struct VariableDecl {
  int slot = 0;
  DType dtype = DType::kF32;
  Shape shape;
  std::string name;  // informational, e.g. "dense/kernel:0"
};

// Most devices (num_replicas x num_cores_per_replica) a program may span: the
// largest plain slice layout (strategy/runtime/slice.cc), so a hostile proto
// cannot make per-replica tables (replica groups) allocate gigabytes.
inline constexpr int64_t kMaxProgramDevices = int64_t{1} << 20;

class Program {
 public:
  Program() = default;

  const std::string& name() const { return name_; }
  int num_replicas() const { return num_replicas_; }
  int num_cores_per_replica() const { return num_cores_per_replica_; }
  const std::vector<Op>& ops() const { return ops_; }
  const Op& op(Value v) const { return ops_[v.id]; }
  const ValueType& type(Value v) const { return ops_[v.id].type; }
  // Parameter values in parameter-index order.
  const std::vector<Value>& parameters() const { return parameters_; }
  const std::vector<Value>& outputs() const { return outputs_; }
  // Declared variables, ascending by slot.
  const std::vector<VariableDecl>& variables() const { return variables_; }
  // nullptr when `slot` is not declared.
  const VariableDecl* FindVariable(int slot) const;
  // True when any value has a dynamic dimension.
  bool has_dynamic_shapes() const { return has_dynamic_shapes_; }

  // The cost rule of op `v` / the sum over all ops (one replica, bound shapes).
  OpCost CostOf(Value v) const;
  OpCost TotalCost() const;

  // HLO-like text, one op per line:
  //   program step (replicas=8, cores_per_replica=1) {
  //     var slot=0 f32[4,3] "w"
  //     %0 = f32[<=8,4] parameter(), index=0
  //     %1 = f32[4,3] variable_read(), slot=0
  //     %2 = f32[<=8,3] dot(%0, %1), lhs_contracting={1}, rhs_contracting={0}
  //     ROOT (%2)
  //   }
  std::string ToText() const;

  void ToProto(proto::ProgramProto* out) const;
  // Rebuilds the program through ProgramBuilder, so every shape rule runs
  // again. InvalidArgument for an unknown op name (naming it), a bad dtype
  // name, an operand that does not refer to an earlier op, or a recorded type
  // that disagrees with the shape rule.
  static absl::StatusOr<Program> FromProto(const proto::ProgramProto& proto);

 private:
  friend class ProgramBuilder;
  std::string name_;
  int num_replicas_ = 1;
  int num_cores_per_replica_ = 1;
  std::vector<Op> ops_;
  std::vector<Value> parameters_;
  std::vector<Value> outputs_;
  std::vector<VariableDecl> variables_;
  bool has_dynamic_shapes_ = false;
};

// Records a Program. Thread-compatible. All Value arguments must come from this
// builder (otherwise InvalidArgument naming the bad value id).
class ProgramBuilder {
 public:
  // Preconditions (CHECKed): num_replicas >= 1, num_cores_per_replica >= 1.
  explicit ProgramBuilder(std::string name, int num_replicas = 1,
                          int num_cores_per_replica = 1);

  int num_replicas() const { return program_.num_replicas_; }
  int num_cores_per_replica() const { return program_.num_cores_per_replica_; }
  // Logical core for ops added from now on. InvalidArgument outside [0,
  // cores_per_replica).
  absl::Status set_logical_core(int core);
  int logical_core() const { return logical_core_; }
  // The type of a value already added. Precondition: v came from this builder.
  const ValueType& type(Value v) const { return program_.ops_[v.id].type; }
  int num_ops() const { return static_cast<int>(program_.ops_.size()); }

  // ---- sources ----
  // The next parameter (index = number of parameters added so far).
  // `dynamic_dims` flags dimensions whose size is only bounded by `shape` (bit
  // i = dim i), typically 0b1 for a dynamic batch. InvalidArgument if the shape
  // is not fully defined or rank > 64.
  absl::StatusOr<Value> Parameter(DType dtype, Shape shape,
                                  uint64_t dynamic_dims = 0);
  absl::StatusOr<Value> Parameter(const ValueType& type) {
    return Parameter(type.dtype, type.shape, type.dynamic_dims);
  }
  // A constant. An abstract literal gives an abstract value (shape and cost
  // only).
  absl::StatusOr<Value> Constant(Tensor literal);
  // i32 scalar.
  Value ReplicaId();

  // ---- variables ----
  // Declares `slot`. Re-declaring with the same dtype and shape is a no-op;
  // otherwise InvalidArgument. Slots are chosen by the caller (e.g. the
  // strategy's variable registry).
  absl::Status DeclareVariable(int slot, DType dtype, Shape shape,
                               std::string name = "");
  // InvalidArgument if `slot` was not declared.
  absl::StatusOr<Value> VariableRead(int slot);
  // `value` must have the variable's dtype and shape exactly (no dynamic dims).
  // Returns the new value of the variable.
  absl::StatusOr<Value> VariableAssign(int slot, Value value);
  absl::StatusOr<Value> VariableAssignAdd(int slot, Value delta);

  // ---- elementwise ----
  absl::StatusOr<Value> Unary(OpCode code, Value x);  // kNeg ... kSqrt
  absl::StatusOr<Value> Binary(OpCode code, Value x, Value y);  // kAdd ... kMin
  absl::StatusOr<Value> Add(Value x, Value y) {
    return Binary(OpCode::kAdd, x, y);
  }
  absl::StatusOr<Value> Sub(Value x, Value y) {
    return Binary(OpCode::kSub, x, y);
  }
  absl::StatusOr<Value> Mul(Value x, Value y) {
    return Binary(OpCode::kMul, x, y);
  }
  absl::StatusOr<Value> Div(Value x, Value y) {
    return Binary(OpCode::kDiv, x, y);
  }
  absl::StatusOr<Value> Max(Value x, Value y) {
    return Binary(OpCode::kMax, x, y);
  }
  absl::StatusOr<Value> Min(Value x, Value y) {
    return Binary(OpCode::kMin, x, y);
  }
  absl::StatusOr<Value> Neg(Value x) { return Unary(OpCode::kNeg, x); }
  absl::StatusOr<Value> Exp(Value x) { return Unary(OpCode::kExp, x); }
  absl::StatusOr<Value> Log(Value x) { return Unary(OpCode::kLog, x); }
  absl::StatusOr<Value> Tanh(Value x) { return Unary(OpCode::kTanh, x); }
  absl::StatusOr<Value> Relu(Value x) { return Unary(OpCode::kRelu, x); }
  absl::StatusOr<Value> Sigmoid(Value x) { return Unary(OpCode::kSigmoid, x); }
  absl::StatusOr<Value> Rsqrt(Value x) { return Unary(OpCode::kRsqrt, x); }
  absl::StatusOr<Value> Sqrt(Value x) { return Unary(OpCode::kSqrt, x); }
  absl::StatusOr<Value> Cast(Value x, DType dtype);

  // ---- linear algebra ----
  // `precision` (XLA's PrecisionConfig) only changes the simulated MXU time;
  // values stay exact f32.
  absl::StatusOr<Value> DotGeneral(Value lhs, Value rhs, DotDims dims,
                                   Precision precision = Precision::kDefault);
  // tf.linalg.matmul: rank >= 2, equal leading batch dims, contracts a's last
  // (or, transposed, second-to-last) dim with b's second-to-last (or last).
  // Result [..., M, N].
  absl::StatusOr<Value> MatMul(Value a, Value b, bool transpose_a = false,
                               bool transpose_b = false,
                               Precision precision = Precision::kDefault);
  // NHWC input, HWIO filter, strides {h, w}.
  absl::StatusOr<Value> Conv2D(Value input, Value filter,
                               std::vector<int64_t> strides, Padding padding,
                               Precision precision = Precision::kDefault);

  // NHWC input, window {h, w}, strides {h, w} (tf.nn.max_pool2d).
  absl::StatusOr<Value> MaxPool2D(Value input, std::vector<int64_t> window,
                                  std::vector<int64_t> strides,
                                  Padding padding);

  // ---- reductions ----
  // Negative axes count from the end; duplicates are InvalidArgument.
  absl::StatusOr<Value> ReduceSum(Value x, std::vector<int64_t> axes,
                                  bool keepdims = false);
  absl::StatusOr<Value> ReduceMean(Value x, std::vector<int64_t> axes,
                                   bool keepdims = false);
  absl::StatusOr<Value> ReduceMax(Value x, std::vector<int64_t> axes,
                                  bool keepdims = false);
  absl::StatusOr<Value> Softmax(Value x);

  // ---- data movement ----
  absl::StatusOr<Value> Reshape(Value x, std::vector<int64_t> shape);
  absl::StatusOr<Value> Transpose(Value x, std::vector<int64_t> permutation);
  absl::StatusOr<Value> Broadcast(Value x, std::vector<int64_t> shape);
  // Empty `strides` means all 1.
  absl::StatusOr<Value> Slice(Value x, std::vector<int64_t> start,
                              std::vector<int64_t> limit,
                              std::vector<int64_t> strides = {});
  absl::StatusOr<Value> Concat(absl::Span<const Value> values, int64_t axis);
  absl::StatusOr<Value> Gather(Value params, Value indices, int64_t axis = 0);
  absl::StatusOr<Value> OneHot(Value indices, int64_t depth,
                               DType dtype = DType::kF32, double on_value = 1.0,
                               double off_value = 0.0);

  // ---- collectives (replica_groups empty = all replicas) ----
  absl::StatusOr<Value> AllReduce(
      Value x, CollectiveReduce reduce,
      std::vector<std::vector<int64_t>> replica_groups = {});
  absl::StatusOr<Value> AllGather(
      Value x, int64_t axis,
      std::vector<std::vector<int64_t>> replica_groups = {});
  absl::StatusOr<Value> ReduceScatter(
      Value x, CollectiveReduce reduce, int64_t axis,
      std::vector<std::vector<int64_t>> replica_groups = {});
  absl::StatusOr<Value> CollectivePermute(
      Value x, std::vector<std::pair<int64_t, int64_t>> source_target_pairs);

  // The generic entry every method above goes through (and FromProto uses):
  // validates the operands, runs the shape rule, records the op on the current
  // logical core.
  absl::StatusOr<Value> AddOp(OpCode code, absl::Span<const Value> operands,
                              OpAttrs attrs);

  // Finishes the program with `outputs` (any values, repeats allowed).
  // InvalidArgument for a value not from this builder. The builder is consumed.
  absl::StatusOr<Program> Build(absl::Span<const Value> outputs) &&;

 private:
  friend class Program;  // FromProto
  Program program_;
  int logical_core_ = 0;
};

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_PROGRAM_H_
