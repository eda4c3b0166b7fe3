// strategy/runtime/ops.h
//
// The op set of a traced Program: op codes, their attributes, value types (with
// bounded dynamic dimensions), the SHAPE RULE of every op (InferOpType) and its
// COST RULE (OpCostOf).
//
//   // f32[<=8,4]
//   ValueType x(DType::kF32, Shape({8, 4}), /*dynamic_dims=*/0b01);
//   OpAttrs attrs;
//   attrs.axes = {0};
//   absl::StatusOr<ValueType> sum =
//       InferOpType(OpCode::kReduceSum, attrs, {&x}, InferContext{});
//   // sum == f32[4]: a reduce over the dynamic axis gives a static result.
//
// Value types and dynamic dimensions. A ValueType's shape is always fully
// defined; a dimension flagged dynamic holds its UPPER BOUND in the shape. At
// execution every replica computes on its TRUE shape (at most the bound); cost
// rules always use the bound (padded) shape, which is what a TPU computes on.
// Shape rules are written so that the same rule serves both: given operand
// types whose dynamic dims hold bounds it returns the bound result type
// (tracing); given the same flags with true sizes it returns the true result
// type (execution).
//
// tpusim choices (documented, tested):
//  * Binary elementwise ops use numpy-style broadcasting (dims aligned at the
//    end, a dim of 1 stretches). Operand dtypes must be identical (no implicit
//    promotion). A dynamic dim may only meet the same dynamic dim or a static
//    1.
//  * Integer div truncates toward zero; integer division by zero is
//    InvalidArgument at execution. reduce_mean on integers divides the integer
//    sum (truncating), as tf does.
//  * Cost: every elementwise op counts 1 flop per result element; exp, log,
//    tanh, sigmoid, rsqrt, sqrt additionally count 1 transcendental per
//    element. reduce: 1 flop per operand element. softmax: 4 flops + 1
//    transcendental per element. dot: 2*M*N*K per batch. conv2d:
//    2*N*Ho*Wo*Co*Kh*Kw*Ci, and the same count for both conv2d gradients
//    (each is one convolution of the same size). max_pool2d: Kh*Kw per result
//    element; max_pool2d_grad: Kh*Kw per dy element (the window scan) plus 1
//    per dy element (the add). compare, select: 1 per result element.
//    scatter_add: 1 per update element. all_to_all: 0 flops. all_reduce /
//    reduce_scatter: (group-1) flops per operand element (the reduction
//    arithmetic). Bytes read = sum of operand byte sizes, bytes written =
//    result byte size, except: parameter, constant, replica_id and reshape (a
//    bitcast on TPU) move 0 bytes; variable_read reads the variable;
//    variable_assign(_add) writes it; slice reads only the elements it keeps
//    (its result size) and gather its indices plus the rows it gathers.

#ifndef TPUSIM_STRATEGY_RUNTIME_OPS_H_
#define TPUSIM_STRATEGY_RUNTIME_OPS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "strategy/runtime/tensor.h"

namespace tpusim::runtime {

enum class OpCode : uint8_t {
  // Sources.
  kParameter,  // attrs.parameter_index, attrs.declared_type
  kConstant,   // attrs.literal
  kReplicaId,  // i32 scalar: the replica executing the program
  // Variables (slot index into the backend's per-device variable storage).
  kVariableRead,       // attrs.variable_slot, attrs.declared_type
  kVariableAssign,     // (value) -> the new value
  kVariableAssignAdd,  // (delta) -> the new value
  // Elementwise unary.
  kNeg,
  kExp,
  kLog,
  kTanh,
  kRelu,
  kSigmoid,
  kRsqrt,
  kSqrt,
  kCast,  // attrs.dtype
  // Elementwise binary (numpy broadcasting).
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,
  // Linear algebra.
  kDot,     // attrs.dot (dot_general): result = batch dims, lhs free dims, rhs
            // free dims; attrs.precision
  kConv2D,  // NHWC input, HWIO filter, attrs.window_strides {h, w},
            // attrs.padding, attrs.precision
  kMaxPool2D,  // NHWC input, attrs.window {h, w}, attrs.window_strides,
               // attrs.padding (padded positions never win)
  // Gradients of conv2d / max_pool2d (same window attributes as the forward
  // op they differentiate).
  kConv2DBackpropInput,   // (dy NHWC, filter HWIO), attrs.shape = the input
                          // shape {N, H, W, Ci}; result = d loss / d input
  kConv2DBackpropFilter,  // (input NHWC, dy NHWC), attrs.shape = the filter
                          // shape {Kh, Kw, Ci, Co}; result = d loss / d filter
  // (input, dy): routes each dy element to the first (row-major) maximum of
  // its window; result = input type.
  kMaxPool2DGrad,
  // Predicates and selection (u8 0/1 is the predicate type).
  kCompare,     // (a, b) broadcasting, attrs.comparison -> u8
  kSelect,      // (pred u8, on_true, on_false), broadcasting all three
  kScatterAdd,  // (operand, indices, updates), attrs.axis: the transpose of
                // gather; updates = operand[:axis] + indices + operand[axis+1:]
  // Reductions.
  kReduceSum,
  kReduceMean,
  kReduceMax,  // attrs.axes, attrs.keepdims
  kSoftmax,    // over the last axis
  // Data movement.
  kReshape,    // attrs.shape (one -1 may be inferred)
  kTranspose,  // attrs.permutation
  kBroadcast,  // attrs.shape (numpy broadcasting of the operand to it)
  kSlice,      // attrs.start, attrs.limit, attrs.strides
  kConcat,     // attrs.axis, >= 1 operands
  kGather,  // (params, indices), attrs.axis; result params[:axis] + indices +
            // params[axis+1:]
  kOneHot,  // (indices), attrs.depth, attrs.dtype, attrs.on_value,
            // attrs.off_value
  // Cross-replica collectives over attrs.replica_groups (empty = all replicas).
  kAllReduce,          // attrs.reduce
  kAllGather,          // attrs.axis
  kReduceScatter,      // attrs.reduce, attrs.axis
  kCollectivePermute,  // attrs.source_target_pairs
  kAllToAll,  // attrs.axis (split), attrs.concat_axis: member i's piece j goes
              // to member j, which concatenates the pieces in group order
};
inline constexpr int kNumOpCodes = static_cast<int>(OpCode::kAllToAll) + 1;

// Stable lowercase names used in text and proto form: "parameter", "add",
// "dot", "conv2d", "reduce_sum", "all_reduce", ...
absl::string_view OpCodeName(OpCode code);
// InvalidArgument naming the unknown op.
absl::StatusOr<OpCode> OpCodeFromName(absl::string_view name);
bool IsElementwiseUnary(OpCode code);
bool IsElementwiseBinary(OpCode code);
bool IsCollective(OpCode code);
// True when the op's result depends on its operands only, so that an op of
// replica-invariant operands (constants, and such ops of them) is the same on
// every replica: false for parameters, replica_id, variable ops and
// collectives.
bool DependsOnOperandsOnly(OpCode code);
bool IsTranscendental(OpCode code);

// The type of one SSA value: dtype, a fully defined shape (bounds for dynamic
// dims) and a bit mask of dynamic dimensions (bit i = dimension i is dynamic).
struct ValueType {
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t dynamic_dims = 0;

  ValueType() = default;
  ValueType(DType d, Shape s, uint64_t dyn = 0)
      : dtype(d), shape(std::move(s)), dynamic_dims(dyn) {}
  static ValueType Of(const Tensor& t) {
    return ValueType(t.dtype(), t.shape());
  }

  int rank() const { return shape.rank(); }
  bool is_dynamic(int dim) const {
    return dim < 64 && ((dynamic_dims >> dim) & 1u);
  }
  bool any_dynamic() const { return dynamic_dims != 0; }
  // Bytes of the (bound) shape on a device; 0 for kBytes.
  int64_t byte_size() const;
  // "f32[<=8,4]" (dynamic dims are printed with "<="), "i32[]".
  std::string ToString() const;
  friend bool operator==(const ValueType& a, const ValueType& b) {
    return a.dtype == b.dtype && a.shape == b.shape &&
           a.dynamic_dims == b.dynamic_dims;
  }
  friend bool operator!=(const ValueType& a, const ValueType& b) {
    return !(a == b);
  }
};

// Short dtype names used in text form: f32 f64 bf16 i32 i64 u8 bytes.
absl::string_view ShortDTypeName(DType dtype);

enum class Padding : uint8_t { kValid, kSame };
enum class CollectiveReduce : uint8_t { kSum, kMean };
// compare's direction; text and proto names "eq" "ne" "lt" "le" "gt" "ge".
enum class Comparison : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
absl::string_view ComparisonName(Comparison c);
// InvalidArgument naming the unknown direction.
absl::StatusOr<Comparison> ComparisonFromName(absl::string_view name);

// XLA's PrecisionConfig of a dot or conv2d: how many bf16 MXU passes an f32
// operand gets on a TPU (DEFAULT one, HIGH three, HIGHEST six; the timing in
// sim/chip/kernel_timing.h). Values computed on the host stay exact f32 at
// every precision; only the simulated time depends on it.
enum class Precision : uint8_t { kDefault, kHigh, kHighest };
// "DEFAULT", "HIGH", "HIGHEST" (text and proto form).
absl::string_view PrecisionName(Precision p);
// InvalidArgument naming the value and the allowed names; "" is DEFAULT.
absl::StatusOr<Precision> PrecisionFromName(absl::string_view name);

// dot_general dimension numbers (XLA's DotDimensionNumbers).
struct DotDims {
  std::vector<int64_t> lhs_batch;
  std::vector<int64_t> rhs_batch;
  std::vector<int64_t> lhs_contracting;
  std::vector<int64_t> rhs_contracting;
  friend bool operator==(const DotDims& a, const DotDims& b) {
    return a.lhs_batch == b.lhs_batch && a.rhs_batch == b.rhs_batch &&
           a.lhs_contracting == b.lhs_contracting &&
           a.rhs_contracting == b.rhs_contracting;
  }
};

// Attributes of an op. Each op reads only the fields named next to its OpCode;
// the rest keep their defaults (the proto and text forms only carry non-default
// fields).
struct OpAttrs {
  int64_t parameter_index = 0;
  int64_t variable_slot = 0;
  ValueType declared_type;           // parameter, variable_read
  Tensor literal;                    // constant
  DType dtype = DType::kF32;         // cast, one_hot
  std::vector<int64_t> shape;        // reshape, broadcast, conv2d_backprop_*
  std::vector<int64_t> permutation;  // transpose
  std::vector<int64_t> axes;         // reduce_*
  bool keepdims = false;             // reduce_*
  int64_t axis = 0;                  // concat, gather, scatter_add, all_gather,
                                     // reduce_scatter, all_to_all (split axis)
  int64_t concat_axis = 0;           // all_to_all
  Comparison comparison = Comparison::kEq;       // compare
  std::vector<int64_t> start;                    // slice
  std::vector<int64_t> limit;                    // slice
  std::vector<int64_t> strides;                  // slice (empty = all 1)
  DotDims dot;                                   // dot
  std::vector<int64_t> window_strides = {1, 1};  // conv2d, max_pool2d {h, w}
  Padding padding = Padding::kValid;             // conv2d, max_pool2d
  Precision precision = Precision::kDefault;     // dot, conv2d
  std::vector<int64_t> window;                   // max_pool2d {h, w}
  int64_t depth = 0;                             // one_hot
  double on_value = 1.0;                         // one_hot
  double off_value = 0.0;                        // one_hot
  CollectiveReduce reduce =
      CollectiveReduce::kSum;  // all_reduce, reduce_scatter
  std::vector<std::vector<int64_t>> replica_groups;  // collectives; empty = all
  std::vector<std::pair<int64_t, int64_t>>
      source_target_pairs;  // collective_permute
};

// What the shape rules need besides the operands.
struct InferContext {
  int num_replicas = 1;
};

// The SHAPE RULE. Returns the result type of `code` applied to `operands` with
// `attrs`, or InvalidArgument whose message names the op, the operand types and
// what is allowed. Never crashes on bad shapes, ranks, axes or dtypes; a result
// of more than 2^52 elements is rejected (keeps size arithmetic in int64).
absl::StatusOr<ValueType> InferOpType(
    OpCode code, const OpAttrs& attrs,
    absl::Span<const ValueType* const> operands, const InferContext& context);

// The replica groups a collective uses: attrs.replica_groups or, when empty,
// one group of all `num_replicas`. InvalidArgument unless every replica
// 0..num_replicas-1 appears exactly once and all groups have the same size.
absl::StatusOr<std::vector<std::vector<int64_t>>> ResolveReplicaGroups(
    OpCode code, const std::vector<std::vector<int64_t>>& groups,
    int num_replicas);

// Counters of one op execution on one device.
struct OpCost {
  int64_t flops = 0;
  int64_t transcendentals = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  // Totals over many ops saturate at INT64_MAX instead of overflowing (each
  // op's own counts are checked to fit by InferOpType).
  OpCost& operator+=(const OpCost& o) {
    flops = SaturatingAdd(flops, o.flops);
    transcendentals = SaturatingAdd(transcendentals, o.transcendentals);
    bytes_read = SaturatingAdd(bytes_read, o.bytes_read);
    bytes_written = SaturatingAdd(bytes_written, o.bytes_written);
    return *this;
  }
  static int64_t SaturatingAdd(int64_t a, int64_t b) {
    int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out)) {
      return b > 0 ? INT64_MAX : INT64_MIN;
    }
    return out;
  }
  friend bool operator==(const OpCost& a, const OpCost& b) {
    return a.flops == b.flops && a.transcendentals == b.transcendentals &&
           a.bytes_read == b.bytes_read && a.bytes_written == b.bytes_written;
  }
};

// The COST RULE, on the bound (padded) shapes; see the file comment for the
// formulas. Preconditions: `result` is what InferOpType returned for these
// operands.
OpCost OpCostOf(OpCode code, const OpAttrs& attrs,
                absl::Span<const ValueType* const> operands,
                const ValueType& result, const InferContext& context);

// As OpCostOf, but InvalidArgument when a count does not fit in int64.
// InferOpType rejects such ops, so OpCostOf never overflows.
absl::StatusOr<OpCost> CheckedOpCost(OpCode code, const OpAttrs& attrs,
                                     absl::Span<const ValueType* const> operands,
                                     const ValueType& result,
                                     const InferContext& context);

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_OPS_H_
