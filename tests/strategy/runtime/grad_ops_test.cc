// Tests of the backward-pass ops: conv2d_backprop_input/_filter,
// max_pool2d_grad, compare, select, scatter_add, all_to_all (shape rule, cost
// rule, host kernel, text and proto form).
//
// The conv gradients are checked EXACTLY by the adjoint identity: the forward
// conv is linear in each operand, so for integer-valued f64 tensors
// <conv(x, w), g> == <x, backprop_input(g, w)> == <w, backprop_filter(x, g)>
// holds bit for bit, and d<conv(x, w), g>/dx[i] = <conv(e_i, w), g> exactly.

#include <cmath>
#include <limits>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/runtime/kernels.h"
#include "strategy/runtime/ops.h"
#include "strategy/runtime/program.h"
#include "strategy/runtime/program.pb.h"

namespace tpusim::runtime {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

absl::StatusOr<ValueType> InferT(OpCode code, const OpAttrs& attrs,
                                 const std::vector<ValueType>& types,
                                 int replicas = 1) {
  std::vector<const ValueType*> p;
  for (const ValueType& t : types) p.push_back(&t);
  return InferOpType(code, attrs, p, InferContext{replicas});
}

absl::StatusOr<Tensor> Eval(OpCode code, const OpAttrs& attrs,
                            std::vector<Tensor> operands) {
  std::vector<ValueType> types;
  for (const Tensor& t : operands) types.push_back(ValueType::Of(t));
  TPUSIM_ASSIGN_OR_RETURN(ValueType result, InferT(code, attrs, types));
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : operands) ptrs.push_back(&t);
  return RunKernel(code, attrs, ptrs, result, 0);
}

OpCost CostT(OpCode code, const OpAttrs& attrs,
             const std::vector<ValueType>& types) {
  std::vector<const ValueType*> p;
  for (const ValueType& t : types) p.push_back(&t);
  absl::StatusOr<ValueType> r = InferOpType(code, attrs, p, InferContext{1});
  EXPECT_THAT(r, IsOk());
  return OpCostOf(code, attrs, p, *r, InferContext{1});
}

Tensor F32(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::FromVector<float>(Shape(std::move(dims)), std::move(v));
}
Tensor F64(std::vector<int64_t> dims, std::vector<double> v) {
  return Tensor::FromVector<double>(Shape(std::move(dims)), std::move(v));
}
std::vector<double> D(const Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.num_elements(); ++i) out.push_back(t.AsDouble(i));
  return out;
}
// Small deterministic integers in [-3, 3].
std::vector<double> Ints(int64_t n, int seed) {
  std::vector<double> v(n);
  uint32_t s = 2654435761u * (seed + 1);
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = static_cast<double>(static_cast<int>((s >> 16) % 7) - 3);
  }
  return v;
}
double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

TEST(GradOpsTest, Conv2DBackpropInputSmallExact) {
  // 1x3x3x1 input, 2x2 filter {1,2,3,4}, VALID, dy = ones(1,2,2,1):
  // dx[i,j] = sum of w[kh,kw] over windows covering (i,j).
  OpAttrs a;
  a.shape = {1, 3, 3, 1};
  absl::StatusOr<Tensor> dx =
      Eval(OpCode::kConv2DBackpropInput, a,
           {F32({1, 2, 2, 1}, {1, 1, 1, 1}), F32({2, 2, 1, 1}, {1, 2, 3, 4})});
  ASSERT_THAT(dx, IsOk());
  EXPECT_EQ(dx->shape(), Shape({1, 3, 3, 1}));
  EXPECT_THAT(D(*dx), ElementsAre(1, 3, 2, 4, 10, 6, 3, 7, 4));
}

TEST(GradOpsTest, Conv2DBackpropFilterSmallExact) {
  // x = 1..9 (3x3), dy = ones(2x2), VALID: dw[kh,kw] = sum of the 2x2 block of
  // x starting at (kh, kw).
  OpAttrs a;
  a.shape = {2, 2, 1, 1};
  absl::StatusOr<Tensor> dw =
      Eval(OpCode::kConv2DBackpropFilter, a,
           {F32({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
            F32({1, 2, 2, 1}, {1, 1, 1, 1})});
  ASSERT_THAT(dw, IsOk());
  EXPECT_EQ(dw->shape(), Shape({2, 2, 1, 1}));
  EXPECT_THAT(D(*dw), ElementsAre(12, 16, 24, 28));
}

struct ConvCase {
  std::vector<int64_t> x, w;
  std::vector<int64_t> strides;
  Padding padding;
};

class ConvAdjointTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvAdjointTest, GradientsAreExactAdjoints) {
  const ConvCase& c = GetParam();
  OpAttrs fa;
  fa.window_strides = c.strides;
  fa.padding = c.padding;
  const int64_t nx = Shape(c.x).num_elements();
  const int64_t nw = Shape(c.w).num_elements();
  const Tensor x = F64(c.x, Ints(nx, 1));
  const Tensor w = F64(c.w, Ints(nw, 2));
  absl::StatusOr<Tensor> y = Eval(OpCode::kConv2D, fa, {x, w});
  ASSERT_THAT(y, IsOk());
  const Tensor g = F64(y->shape().dims(), Ints(y->num_elements(), 3));
  OpAttrs ia = fa;
  ia.shape = c.x;
  absl::StatusOr<Tensor> dx = Eval(OpCode::kConv2DBackpropInput, ia, {g, w});
  ASSERT_THAT(dx, IsOk());
  OpAttrs wa = fa;
  wa.shape = c.w;
  absl::StatusOr<Tensor> dw = Eval(OpCode::kConv2DBackpropFilter, wa, {x, g});
  ASSERT_THAT(dw, IsOk());
  // The partial derivative of L(x) = <conv(x, w), g> in x[i] is L(e_i).
  for (int64_t i = 0; i < nx; ++i) {
    std::vector<double> e(nx, 0.0);
    e[i] = 1;
    absl::StatusOr<Tensor> ye = Eval(OpCode::kConv2D, fa, {F64(c.x, e), w});
    ASSERT_THAT(ye, IsOk());
    ASSERT_EQ(D(*dx)[i], Dot(D(*ye), D(g))) << "input element " << i;
  }
  for (int64_t i = 0; i < nw; ++i) {
    std::vector<double> e(nw, 0.0);
    e[i] = 1;
    absl::StatusOr<Tensor> ye = Eval(OpCode::kConv2D, fa, {x, F64(c.w, e)});
    ASSERT_THAT(ye, IsOk());
    ASSERT_EQ(D(*dw)[i], Dot(D(*ye), D(g))) << "filter element " << i;
  }
  // Cost: each gradient is one convolution of the forward size.
  const OpCost fwd =
      CostT(OpCode::kConv2D, fa, {ValueType::Of(x), ValueType::Of(w)});
  EXPECT_EQ(CostT(OpCode::kConv2DBackpropInput, ia,
                  {ValueType::Of(g), ValueType::Of(w)})
                .flops,
            fwd.flops);
  EXPECT_EQ(CostT(OpCode::kConv2DBackpropFilter, wa,
                  {ValueType::Of(x), ValueType::Of(g)})
                .flops,
            fwd.flops);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvAdjointTest,
    ::testing::Values(
        ConvCase{{1, 4, 4, 1}, {3, 3, 1, 1}, {1, 1}, Padding::kSame},
        ConvCase{{2, 5, 4, 2}, {3, 3, 2, 3}, {2, 2}, Padding::kSame},
        ConvCase{{1, 6, 6, 2}, {3, 3, 2, 2}, {2, 2}, Padding::kSame},
        ConvCase{{1, 7, 5, 2}, {2, 3, 2, 2}, {2, 1}, Padding::kValid},
        ConvCase{{1, 9, 9, 1}, {7, 7, 1, 2}, {2, 2}, Padding::kSame},
        ConvCase{{2, 4, 4, 3}, {1, 1, 3, 2}, {2, 2}, Padding::kValid}));

TEST(GradOpsTest, ConvBackpropShapeRuleErrorsNameTheValue) {
  const ValueType dy(DType::kF32, Shape({1, 2, 2, 1}));
  const ValueType w(DType::kF32, Shape({2, 2, 1, 1}));
  OpAttrs a;
  a.shape = {1, 3, 3};
  EXPECT_THAT(InferT(OpCode::kConv2DBackpropInput, a, {dy, w}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("conv2d_backprop_input(f32[1,2,2,1], "
                                       "f32[2,2,1,1])"),
                             HasSubstr("shape={1,3,3} must be the input shape "
                                       "{N, H, W, Ci} (4 values)"))));
  a.shape = {1, 4, 3, 1};
  EXPECT_THAT(InferT(OpCode::kConv2DBackpropInput, a, {dy, w}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("conv2d with shape={1,4,3,1} gives "
                                 "f32[1,3,2,1], not dy's f32[1,2,2,1]")));
  a.shape = {0, 3, 3, 1};
  EXPECT_THAT(InferT(OpCode::kConv2DBackpropInput, a, {dy, w}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("has a dimension 0; every dimension must be "
                                 ">= 1")));
  a.shape = {2, 2, 2, 1};
  const ValueType x(DType::kF32, Shape({1, 3, 3, 1}));
  EXPECT_THAT(InferT(OpCode::kConv2DBackpropFilter, a, {x, dy}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input channels 1 != filter input channels "
                                 "2")));
  // A dynamic batch: the input gradient keeps dy's dynamic N.
  a.shape = {4, 3, 3, 1};
  absl::StatusOr<ValueType> t =
      InferT(OpCode::kConv2DBackpropInput, a,
             {ValueType(DType::kF32, Shape({4, 2, 2, 1}), 0b1), w});
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->ToString(), "f32[<=4,3,3,1]");
}

TEST(GradOpsTest, MaxPoolGradRoutesToFirstMaximum) {
  // 1x2x4x1 input, 2x2 window stride 2 VALID: windows {1,5,3,5} (tie: the
  // first 5 in row-major order wins) and {2,0,4,4} (tie -> first 4).
  OpAttrs a;
  a.window = {2, 2};
  a.window_strides = {2, 2};
  absl::StatusOr<Tensor> dx = Eval(OpCode::kMaxPool2DGrad, a,
                                   {F32({1, 2, 4, 1}, {1, 5, 2, 0, 3, 5, 4, 4}),
                                    F32({1, 1, 2, 1}, {10, 20})});
  ASSERT_THAT(dx, IsOk());
  EXPECT_THAT(D(*dx), ElementsAre(0, 10, 0, 0, 0, 0, 20, 0));
}

TEST(GradOpsTest, MaxPoolGradSameOverlappingWindowsAddAndMatchFiniteDiffs) {
  // 3x3 window, stride 2, SAME on 5x5 (ResNet's stem pool shape): windows
  // overlap, so an element that wins two windows receives both.
  OpAttrs a;
  a.window = {3, 3};
  a.window_strides = {2, 2};
  a.padding = Padding::kSame;
  std::vector<double> xs(25);
  for (int i = 0; i < 25; ++i) xs[i] = std::sin(1.7 * i + 0.3);  // distinct
  const Tensor x = F64({1, 5, 5, 1}, xs);
  absl::StatusOr<Tensor> y = Eval(OpCode::kMaxPool2D, a, {x});
  ASSERT_THAT(y, IsOk());
  const Tensor g = F64(y->shape().dims(), {1, 2, 3, 4, 5, 6, 7, 8, 9});
  absl::StatusOr<Tensor> dx = Eval(OpCode::kMaxPool2DGrad, a, {x, g});
  ASSERT_THAT(dx, IsOk());
  const double eps = 1e-6;
  for (int i = 0; i < 25; ++i) {
    std::vector<double> xp = xs, xm = xs;
    xp[i] += eps;
    xm[i] -= eps;
    absl::StatusOr<Tensor> yp =
        Eval(OpCode::kMaxPool2D, a, {F64({1, 5, 5, 1}, xp)});
    absl::StatusOr<Tensor> ym =
        Eval(OpCode::kMaxPool2D, a, {F64({1, 5, 5, 1}, xm)});
    const double fd = (Dot(D(*yp), D(g)) - Dot(D(*ym), D(g))) / (2 * eps);
    EXPECT_NEAR(D(*dx)[i], fd, 1e-6) << "element " << i;
  }
  EXPECT_EQ(
      CostT(OpCode::kMaxPool2DGrad, a, {ValueType::Of(x), ValueType::Of(g)})
          .flops,
      9 * (9 + 1));
  OpAttrs bad = a;
  EXPECT_THAT(
      InferT(OpCode::kMaxPool2DGrad, bad,
             {ValueType::Of(x), ValueType(DType::kF64, Shape({1, 2, 2, 1}))}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("dy must be the forward result type "
                         "f64[1,3,3,1]")));
}

TEST(GradOpsTest, CompareAndSelectGiveTheReluGradient) {
  OpAttrs gt;
  gt.comparison = Comparison::kGt;
  const Tensor x = F32({2, 3}, {-1, 0, 2, 3, -4, 0.5f});
  absl::StatusOr<Tensor> pred =
      Eval(OpCode::kCompare, gt, {x, Tensor::Scalar<float>(0)});
  ASSERT_THAT(pred, IsOk());
  EXPECT_EQ(pred->dtype(), DType::kU8);
  EXPECT_THAT(D(*pred), ElementsAre(0, 0, 1, 1, 0, 1));
  absl::StatusOr<Tensor> dx =
      Eval(OpCode::kSelect, {},
           {*pred, F32({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor::Scalar<float>(0)});
  ASSERT_THAT(dx, IsOk());
  EXPECT_THAT(D(*dx), ElementsAre(0, 0, 3, 4, 0, 6));
  // Every direction, NaN compares false except ne.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = F32({4}, {1, 2, 3, nan});
  const Tensor b = F32({4}, {2, 2, 2, nan});
  const std::vector<std::vector<double>> want = {{0, 1, 0, 0}, {1, 0, 1, 1},
                                                 {1, 0, 0, 0}, {1, 1, 0, 0},
                                                 {0, 0, 1, 0}, {0, 1, 1, 0}};
  for (int c = 0; c < 6; ++c) {
    OpAttrs ca;
    ca.comparison = static_cast<Comparison>(c);
    absl::StatusOr<Tensor> r = Eval(OpCode::kCompare, ca, {a, b});
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(D(*r), want[c]) << ComparisonName(ca.comparison);
  }
  EXPECT_THAT(ComparisonFromName("gte"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("comparison \"gte\" is unknown; allowed eq, "
                                 "ne, lt, le, gt, ge")));
  EXPECT_THAT(InferT(OpCode::kSelect, {},
                     {ValueType(DType::kF32, Shape({2})),
                      ValueType(DType::kF32, Shape({2})),
                      ValueType(DType::kF32, Shape({2}))}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the predicate must be u8")));
  EXPECT_THAT(InferT(OpCode::kSelect, {},
                     {ValueType(DType::kU8, Shape({3})),
                      ValueType(DType::kF32, Shape({2})),
                      ValueType(DType::kF32, Shape({2}))}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not broadcast-compatible at dimension 0 "
                                 "(2 vs 3)")));
  EXPECT_THAT(InferT(OpCode::kCompare, gt,
                     {ValueType(DType::kF32, Shape({2})),
                      ValueType(DType::kI32, Shape({2}))}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("operand dtypes must be equal")));
  EXPECT_EQ(CostT(OpCode::kSelect, {},
                  {ValueType(DType::kU8, Shape({2, 3})),
                   ValueType(DType::kF32, Shape({2, 3})),
                   ValueType(DType::kF32, Shape({}))})
                .flops,
            6);
}

TEST(GradOpsTest, ScatterAddIsGathersTransposeAndRepeatsAdd) {
  // Embedding gradient: table [4, 2], ids {1, 3, 1}, updates rows.
  const Tensor table = F32({4, 2}, {0, 0, 0, 0, 0, 0, 100, 100});
  const Tensor ids = Tensor::FromVector<int32_t>(Shape({3}), {1, 3, 1});
  absl::StatusOr<Tensor> r = Eval(
      OpCode::kScatterAdd, {}, {table, ids, F32({3, 2}, {1, 2, 3, 4, 5, 6})});
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(D(*r), ElementsAre(0, 0, 6, 8, 0, 0, 103, 104));
  // Along axis 1 with 2-d indices: <gather(p, i), u> == <p, scatter(0, i, u)>.
  OpAttrs a1;
  a1.axis = 1;
  const Tensor p = F64({2, 5}, Ints(10, 4));
  const Tensor idx = Tensor::FromVector<int64_t>(Shape({2, 2}), {4, 0, 4, 2});
  const Tensor u = F64({2, 2, 2}, Ints(8, 5));
  absl::StatusOr<Tensor> gathered = Eval(OpCode::kGather, a1, {p, idx});
  ASSERT_THAT(gathered, IsOk());
  absl::StatusOr<Tensor> scattered =
      Eval(OpCode::kScatterAdd, a1,
           {Tensor::Zeros(DType::kF64, Shape({2, 5})), idx, u});
  ASSERT_THAT(scattered, IsOk());
  EXPECT_EQ(Dot(D(*gathered), D(u)), Dot(D(p), D(*scattered)));
  // Errors name the value.
  EXPECT_THAT(Eval(OpCode::kScatterAdd, {},
                   {table, Tensor::FromVector<int32_t>(Shape({1}), {4}),
                    F32({1, 2}, {1, 1})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("scatter_add: index 4 (element 0 of indices) "
                                 "is out of range [0, 4) of operand dimension "
                                 "0")));
  EXPECT_THAT(InferT(OpCode::kScatterAdd, {},
                     {ValueType::Of(table), ValueType::Of(ids),
                      ValueType(DType::kF32, Shape({3, 3}))}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("updates must have type f32[3,2]")));
  EXPECT_EQ(CostT(OpCode::kScatterAdd, {},
                  {ValueType::Of(table), ValueType::Of(ids),
                   ValueType(DType::kF32, Shape({3, 2}))})
                .flops,
            6);
}

TEST(GradOpsTest, AllToAllExchangesPiecesInGroupOrder) {
  // 2 members, x_i [2, 2]: split rows, concat along columns.
  OpAttrs a;
  a.axis = 0;
  a.concat_axis = 1;
  const Tensor x0 = F32({2, 2}, {1, 2, 3, 4});
  const Tensor x1 = F32({2, 2}, {5, 6, 7, 8});
  absl::StatusOr<ValueType> t =
      InferT(OpCode::kAllToAll, a, {ValueType::Of(x0)}, 2);
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->ToString(), "f32[1,4]");
  absl::StatusOr<std::vector<Tensor>> out =
      RunCollective(OpCode::kAllToAll, a, {&x0, &x1}, {*t, *t});
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(D((*out)[0]), ElementsAre(1, 2, 5, 6));
  EXPECT_THAT(D((*out)[1]), ElementsAre(3, 4, 7, 8));
  a.axis = 1;
  EXPECT_THAT(
      InferT(OpCode::kAllToAll, a, {ValueType(DType::kF32, Shape({2, 3}))}, 2),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("split dimension 1 (3) must be divisible by "
                         "the group size 2")));
  a.concat_axis = 2;
  EXPECT_THAT(
      InferT(OpCode::kAllToAll, a, {ValueType(DType::kF32, Shape({2, 2}))}, 2),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("concat_axis=2 is out of range for rank 2")));
}

TEST(GradOpsTest, NewOpsRoundTripThroughTextAndProto) {
  ProgramBuilder b("grads", /*num_replicas=*/2);
  Value x = *b.Parameter(DType::kF32, Shape({2, 4, 4, 3}));
  Value w = *b.Parameter(DType::kF32, Shape({3, 3, 3, 2}));
  Value y = *b.Conv2D(x, w, {2, 2}, Padding::kSame);
  Value dx = *b.Conv2DBackpropInput(y, w, {2, 4, 4, 3}, {2, 2}, Padding::kSame);
  Value dw =
      *b.Conv2DBackpropFilter(x, y, {3, 3, 3, 2}, {2, 2}, Padding::kSame);
  Value p = *b.MaxPool2D(x, {3, 3}, {2, 2}, Padding::kSame);
  Value dp = *b.MaxPool2DGrad(x, p, {3, 3}, {2, 2}, Padding::kSame);
  Value zero = *b.Constant(Tensor::Scalar<float>(0));
  Value pred = *b.Compare(dx, zero, Comparison::kGe);
  Value sel = *b.Select(pred, dx, dp);
  Value ids = *b.Constant(Tensor::FromVector<int32_t>(Shape({2}), {0, 2}));
  Value upd = *b.Gather(w, ids, 0);
  Value sc = *b.ScatterAdd(w, ids, upd, 0);
  Value a2a = *b.AllToAll(sel, 0, 3);
  absl::StatusOr<Program> prog = std::move(b).Build({dw, sc, a2a});
  ASSERT_THAT(prog, IsOk());
  const std::string text = prog->ToText();
  EXPECT_THAT(text,
              HasSubstr("%3 = f32[2,4,4,3] conv2d_backprop_input(%2, %1), "
                        "shape={2,4,4,3}, window_strides={2,2}, "
                        "padding=SAME"));
  EXPECT_THAT(text,
              HasSubstr("%4 = f32[3,3,3,2] conv2d_backprop_filter(%0, %2), "
                        "shape={3,3,3,2}, window_strides={2,2}, "
                        "padding=SAME"));
  EXPECT_THAT(text, HasSubstr("%6 = f32[2,4,4,3] max_pool2d_grad(%0, %5), "
                              "window={3,3}, window_strides={2,2}, "
                              "padding=SAME"));
  EXPECT_THAT(text, HasSubstr("%8 = u8[2,4,4,3] compare(%3, %7), "
                              "comparison=ge"));
  EXPECT_THAT(text, HasSubstr("%9 = f32[2,4,4,3] select(%8, %3, %6)"));
  EXPECT_THAT(text, HasSubstr("%12 = f32[3,3,3,2] scatter_add(%1, %10, %11), "
                              "axis=0"));
  EXPECT_THAT(text, HasSubstr("%13 = f32[1,4,4,6] all_to_all(%9), axis=0, "
                              "concat_axis=3"));
  proto::ProgramProto pp;
  prog->ToProto(&pp);
  absl::StatusOr<Program> back = Program::FromProto(pp);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->ToText(), text);
  pp.mutable_ops(8)->set_comparison("bigger");
  EXPECT_THAT(Program::FromProto(pp),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op %8: comparison \"bigger\" is unknown")));
}

}  // namespace
}  // namespace tpusim::runtime
