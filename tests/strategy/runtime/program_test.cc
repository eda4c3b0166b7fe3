#include "strategy/runtime/program.h"

#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "strategy/runtime/program.pb.h"

namespace tpusim::runtime {
namespace {

using ::testing::HasSubstr;
using ::tpusim::testing::IsOk;
using ::tpusim::testing::StatusIs;

// A program touching most op kinds, with a dynamic batch.
Program MakeStep() {
  ProgramBuilder b("step", /*num_replicas=*/4);
  Value x = *b.Parameter(DType::kF32, Shape({8, 4}), /*dynamic_dims=*/0b1);
  Value labels = *b.Parameter(DType::kI32, Shape({8}), 0b1);
  EXPECT_THAT(b.DeclareVariable(0, DType::kF32, Shape({4, 3}), "w:0"), IsOk());
  Value w = *b.VariableRead(0);
  Value logits = *b.MatMul(x, w);
  Value probs = *b.Softmax(logits);
  Value onehot = *b.OneHot(labels, 3);
  Value diff = *b.Sub(probs, onehot);
  Value grad = *b.MatMul(x, diff, /*transpose_a=*/true);
  Value summed = *b.AllReduce(grad, CollectiveReduce::kMean);
  Value lr = *b.Constant(Tensor::Scalar<float>(0.5f));
  Value step = *b.Mul(summed, lr);
  Value neg = *b.Neg(step);
  Value updated = *b.VariableAssignAdd(0, neg);
  Value loss = *b.ReduceMean(*b.Mul(diff, diff), {0, 1});
  Value rid = b.ReplicaId();
  absl::StatusOr<Program> p = std::move(b).Build({loss, updated, rid});
  EXPECT_THAT(p, IsOk());
  return *std::move(p);
}

TEST(ProgramTest, BuilderRecordsTypedSsaOps) {
  Program p = MakeStep();
  EXPECT_EQ(p.name(), "step");
  EXPECT_EQ(p.num_replicas(), 4);
  ASSERT_EQ(p.parameters().size(), 2u);
  EXPECT_EQ(p.type(p.parameters()[0]).ToString(), "f32[<=8,4]");
  EXPECT_EQ(p.type(p.outputs()[0]).ToString(), "f32[]");
  EXPECT_EQ(p.type(p.outputs()[1]).ToString(), "f32[4,3]");
  EXPECT_EQ(p.type(p.outputs()[2]).ToString(), "i32[]");
  EXPECT_TRUE(p.has_dynamic_shapes());
  ASSERT_EQ(p.variables().size(), 1u);
  EXPECT_EQ(p.variables()[0].name, "w:0");
}

TEST(ProgramTest, MatMulTransposeContractsTheRightDims) {
  ProgramBuilder b("mm");
  Value a = *b.Parameter(DType::kF32, Shape({2, 5, 3}));
  Value c = *b.Parameter(DType::kF32, Shape({2, 4, 5}));
  absl::StatusOr<Value> y =
      b.MatMul(a, c, /*transpose_a=*/true, /*transpose_b=*/true);
  ASSERT_THAT(y, IsOk());
  EXPECT_EQ(b.type(*y).ToString(), "f32[2,3,4]");
  EXPECT_THAT(b.MatMul(a, c),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("contracting dimension 0 sizes differ")));
  Value v = *b.Parameter(DType::kF32, Shape({3}));
  EXPECT_THAT(b.MatMul(v, v), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("equal rank >= 2")));
}

TEST(ProgramTest, FailedOpLeavesBuilderUnchanged) {
  ProgramBuilder b("p");
  Value x = *b.Parameter(DType::kF32, Shape({2}));
  Value y = *b.Parameter(DType::kI32, Shape({2}));
  EXPECT_EQ(b.num_ops(), 2);
  EXPECT_THAT(b.Add(x, y), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("add(f32[2], i32[2])")));
  EXPECT_EQ(b.num_ops(), 2);
}

TEST(ProgramTest, ForeignValueIdIsRejected) {
  ProgramBuilder b("p");
  EXPECT_THAT(b.Exp(Value{7}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("operand %7 is not a value of program p")));
  EXPECT_THAT(std::move(b).Build({Value{0}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("output %0 is not a value")));
}

TEST(ProgramTest, VariablesMustBeDeclaredConsistently) {
  ProgramBuilder b("p");
  EXPECT_THAT(b.VariableRead(2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("variable slot 2 is not declared")));
  ASSERT_THAT(b.DeclareVariable(2, DType::kF32, Shape({3})), IsOk());
  EXPECT_THAT(b.DeclareVariable(2, DType::kF32, Shape({3})), IsOk());
  EXPECT_THAT(
      b.DeclareVariable(2, DType::kF32, Shape({4})),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("slot 2 is already declared as f32[3], not f32[4]")));
  EXPECT_THAT(
      b.DeclareVariable(-1, DType::kF32, Shape({4})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be >= 0")));
}

TEST(ProgramTest, LogicalCoreMustBeInRange) {
  ProgramBuilder b("mp", 1, /*num_cores_per_replica=*/2);
  EXPECT_THAT(b.set_logical_core(1), IsOk());
  Value x = *b.Parameter(DType::kF32, Shape({2}));
  EXPECT_EQ(b.type(x).ToString(), "f32[2]");
  EXPECT_THAT(b.set_logical_core(2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("logical_core=2 is outside [0, 2)")));
  Program p = *std::move(b).Build({x});
  EXPECT_EQ(p.ops()[0].logical_core, 1);
}

TEST(ProgramTest, PrintsHloLikeText) {
  ProgramBuilder b("tiny", 2);
  Value x = *b.Parameter(DType::kF32, Shape({8, 4}), 0b1);
  ASSERT_THAT(b.DeclareVariable(0, DType::kF32, Shape({4, 3}), "w"), IsOk());
  Value w = *b.VariableRead(0);
  Value y = *b.MatMul(x, w);
  Value s = *b.ReduceSum(y, {0});
  Value r = *b.AllReduce(s, CollectiveReduce::kSum);
  Program p = *std::move(b).Build({r});
  EXPECT_EQ(p.ToText(),
            "program tiny (replicas=2, cores_per_replica=1) {\n"
            "  var slot=0 f32[4,3] \"w\"\n"
            "  %0 = f32[<=8,4] parameter(), index=0\n"
            "  %1 = f32[4,3] variable_read(), slot=0\n"
            "  %2 = f32[<=8,3] dot(%0, %1), lhs_contracting={1}, "
            "rhs_contracting={0}\n"
            "  %3 = f32[3] reduce_sum(%2), axes={0}\n"
            "  %4 = f32[3] all_reduce(%3), reduce=sum\n"
            "  ROOT (%4)\n"
            "}\n");
}

TEST(ProgramTest, ProtoRoundTripGivesIdenticalText) {
  Program p = MakeStep();
  proto::ProgramProto pb;
  p.ToProto(&pb);
  // Through bytes, as a file would.
  std::string bytes;
  ASSERT_TRUE(pb.SerializeToString(&bytes));
  proto::ProgramProto parsed_pb;
  ASSERT_TRUE(parsed_pb.ParseFromString(bytes));
  absl::StatusOr<Program> back = Program::FromProto(parsed_pb);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->ToText(), p.ToText());
  EXPECT_EQ(back->outputs(), p.outputs());
  EXPECT_EQ(back->ops().size(), p.ops().size());
  // The constant's literal survives bit for bit.
  for (size_t i = 0; i < p.ops().size(); ++i) {
    if (p.ops()[i].code == OpCode::kConstant) {
      EXPECT_EQ(back->ops()[i].attrs.literal, p.ops()[i].attrs.literal);
    }
  }
}

TEST(ProgramTest, ProtoRoundTripKeepsCollectiveAttributesAndCores) {
  ProgramBuilder b("c", 4, 2);
  Value x = *b.Parameter(DType::kBF16, Shape({4, 2}));
  ASSERT_THAT(b.set_logical_core(1), IsOk());
  Value g = *b.AllGather(x, 1, {{0, 1}, {2, 3}});
  Value rs = *b.ReduceScatter(g, CollectiveReduce::kMean, 0, {{0, 2}, {1, 3}});
  Value cp = *b.CollectivePermute(rs, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
  Value sl = *b.Slice(cp, {0, 0}, {2, 4}, {2, 1});
  Value img = *b.Parameter(DType::kF32, Shape({2, 6, 6, 3}));
  Value pooled = *b.MaxPool2D(img, {3, 3}, {2, 2}, Padding::kSame);
  Program p = *std::move(b).Build({sl, pooled});
  proto::ProgramProto pb;
  p.ToProto(&pb);
  absl::StatusOr<Program> back = Program::FromProto(pb);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->ToText(), p.ToText());
  EXPECT_THAT(p.ToText(),
              HasSubstr("all_gather(%0), axis=1, replica_groups={{0,1},{2,3}}, "
                        "core=1"));
  EXPECT_THAT(p.ToText(),
              HasSubstr("source_target_pairs={{0,1},{1,2},{2,3},{3,0}}"));
  EXPECT_THAT(p.ToText(),
              HasSubstr("= f32[2,3,3,3] max_pool2d(%5), window={3,3}, "
                        "window_strides={2,2}, padding=SAME, core=1"));
}

TEST(ProgramTest, ParsingUnknownOpNamesIt) {
  Program p = MakeStep();
  proto::ProgramProto pb;
  p.ToProto(&pb);
  pb.mutable_ops(4)->set_op("fancy_attention");
  EXPECT_THAT(Program::FromProto(pb),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op %4: unknown op \"fancy_attention\"")));
}

TEST(ProgramTest, ParsingRerunsShapeRules) {
  Program p = MakeStep();
  proto::ProgramProto pb;
  p.ToProto(&pb);
  // Make the first parameter's declared shape disagree with its recorded type.
  pb.mutable_ops(0)->mutable_declared_type()->set_dims(1, 5);
  EXPECT_THAT(
      Program::FromProto(pb),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("recorded type f32[<=8,4] disagrees with the shape rule's "
                    "f32[<=8,5]")));
  p.ToProto(&pb);
  pb.mutable_ops(3)->set_operands(0, 9);
  EXPECT_THAT(
      Program::FromProto(pb),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("operand %9 does not refer to an earlier op")));
  p.ToProto(&pb);
  pb.mutable_ops(0)->set_dtype("float17");
  EXPECT_THAT(
      Program::FromProto(pb),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"float17\"")));
}

// A ProgramProto whose only op is a constant with the given literal.
proto::ProgramProto ConstantProgram(const std::string& dtype,
                                    std::vector<int64_t> dims,
                                    const std::string& data) {
  proto::ProgramProto pb;
  pb.set_name("p");
  pb.set_num_replicas(1);
  pb.set_num_cores_per_replica(1);
  proto::OpProto* op = pb.add_ops();
  op->set_op("constant");
  op->mutable_literal()->set_dtype(dtype);
  for (int64_t d : dims) op->mutable_literal()->add_dims(d);
  op->mutable_literal()->set_data(data);
  pb.add_outputs(0);
  return pb;
}

// Found reviewing FromProto for the fuzz target: the literal's tensor was
// allocated from its claimed shape before its data size was checked (4 TiB
// here).
TEST(ProgramTest, ParsingHugeLiteralFailsBeforeAllocating) {
  EXPECT_THAT(
      Program::FromProto(ConstantProgram("float32", {1LL << 40}, "abcd")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "program p op %0: constant literal has 4 data bytes, "
               "float32[1099511627776] needs 4398046511104"));
  EXPECT_THAT(
      Program::FromProto(ConstantProgram("string", {1LL << 40}, "")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "program p op %0: constant literal has 0 strings, shape needs "
               "1099511627776"));
}

// The element count (or byte size) of a literal's shape overflowing int64 is
// an error naming the shape, for data and abstract literals alike.
TEST(ProgramTest, ParsingLiteralWhoseSizeOverflowsFails) {
  const std::string want =
      "program p op %0: shape [4294967296,4294967296] has more than 2^63-1 "
      "elements (the product of its dimensions overflows int64)";
  EXPECT_THAT(
      Program::FromProto(ConstantProgram("uint8", {1LL << 32, 1LL << 32}, "")),
      StatusIs(absl::StatusCode::kInvalidArgument, want));
  proto::ProgramProto abstract =
      ConstantProgram("uint8", {1LL << 32, 1LL << 32}, "");
  abstract.mutable_ops(0)->mutable_literal()->set_abstract(true);
  EXPECT_THAT(Program::FromProto(abstract),
              StatusIs(absl::StatusCode::kInvalidArgument, want));
  // 2^61 float64 elements fit in int64, their 2^64 bytes do not.
  EXPECT_THAT(Program::FromProto(ConstantProgram("float64", {1LL << 61}, "")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "program p op %0: float64[2305843009213693952] has "
                       "2305843009213693952 elements of 8 bytes: more than "
                       "2^63-1 bytes"));
  // The largest byte size that fits is only compared with the data.
  EXPECT_THAT(
      Program::FromProto(ConstantProgram("uint8", {(1LL << 62) - 1, 2}, "")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "program p op %0: constant literal has 0 data bytes, "
               "uint8[4611686018427387903,2] needs 9223372036854775806"));
}

// Regression (tests/fuzz/regressions/program/replica_count_huge): a collective
// in a program of 2^31-1 replicas built an 8-byte-per-replica group table
// (17 GB) before anything else failed.
TEST(ProgramTest, ParsingTooManyDevicesFailsBeforeAllocating) {
  proto::ProgramProto pb;
  pb.set_name("p");
  pb.set_num_replicas(2147483647);
  pb.set_num_cores_per_replica(1);
  EXPECT_THAT(Program::FromProto(pb),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "program p: num_replicas=2147483647 x "
                       "num_cores_per_replica=1 devices exceed the limit of "
                       "1048576"));
  pb.set_num_replicas(1024);
  pb.set_num_cores_per_replica(2048);
  EXPECT_THAT(Program::FromProto(pb),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "program p: num_replicas=1024 x "
                       "num_cores_per_replica=2048 devices exceed the limit "
                       "of 1048576"));
  // The limit itself is allowed.
  pb.set_num_cores_per_replica(1024);
  EXPECT_THAT(Program::FromProto(pb), IsOk());
}

// A variable slot wider than int must not alias the slot it truncates to.
TEST(ProgramTest, ParsingVariableSlotBeyondIntIsNotDeclared) {
  proto::ProgramProto pb;
  pb.set_name("p");
  pb.set_num_replicas(1);
  pb.set_num_cores_per_replica(1);
  proto::VariableDeclProto* var = pb.add_variables();
  var->set_slot(0);
  var->set_dtype("float32");
  proto::OpProto* op = pb.add_ops();
  op->set_op("variable_read");
  op->set_variable_slot(1LL << 32);
  pb.add_outputs(0);
  EXPECT_THAT(Program::FromProto(pb),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "program p op %0: variable slot 4294967296 is not "
                       "declared"));
  op->set_variable_slot(0);
  EXPECT_THAT(Program::FromProto(pb), IsOk());
}

// Every op name on every op position, with odd attributes: parsing must give
// OK or InvalidArgument, never crash.
TEST(ProgramTest, MutatedProtosNeverCrash) {
  proto::ProgramProto base;
  MakeStep().ToProto(&base);
  using Mutation = void (*)(proto::OpProto*);
  const std::vector<Mutation> mutations = {
      [](proto::OpProto*) {},
      [](proto::OpProto* o) {
        o->clear_axes();
        o->add_axes(5);
      },
      [](proto::OpProto* o) {
        o->clear_axes();
        o->add_axes(-9);
      },
      [](proto::OpProto* o) {
        o->clear_shape();
        o->add_shape(-1);
        o->add_shape(-1);
      },
      [](proto::OpProto* o) {
        o->clear_shape();
        o->add_shape(0);
      },
      [](proto::OpProto* o) {
        o->clear_shape();
        o->add_shape(-7);
      },
      [](proto::OpProto* o) {
        o->clear_permutation();
        o->add_permutation(0);
        o->add_permutation(0);
      },
      [](proto::OpProto* o) {
        o->clear_start();
        o->add_start(1);
        o->clear_limit();
      },
      [](proto::OpProto* o) { o->add_lhs_contracting(3); },
      [](proto::OpProto* o) {
        o->clear_window_strides();
        o->add_window_strides(0);
      },
      [](proto::OpProto* o) { o->set_depth(-3); },
      [](proto::OpProto* o) { o->add_replica_groups()->add_replicas(9); },
      [](proto::OpProto* o) {
        auto* p = o->add_source_target_pairs();
        p->set_source(0);
        p->set_target(0);
        p = o->add_source_target_pairs();
        p->set_source(0);
        p->set_target(1);
      },
      [](proto::OpProto* o) { o->set_axis(7); },
      [](proto::OpProto* o) { o->set_dtype("string"); },
      [](proto::OpProto* o) { o->clear_operands(); },
      [](proto::OpProto* o) { o->add_operands(0); },
  };
  int parsed_ok = 0, rejected = 0;
  for (int i = 0; i < base.ops_size(); ++i) {
    for (int code = 0; code < kNumOpCodes; ++code) {
      for (Mutation m : mutations) {
        proto::ProgramProto pb = base;
        proto::OpProto* op = pb.mutable_ops(i);
        op->set_op(std::string(OpCodeName(static_cast<OpCode>(code))));
        m(op);
        absl::StatusOr<Program> p = Program::FromProto(pb);
        if (p.ok()) {
          ++parsed_ok;
        } else {
          ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument)
              << p.status().ToString();
          ++rejected;
        }
      }
    }
  }
  EXPECT_GT(parsed_ok, 0);
  EXPECT_GT(rejected, 0);
}

TEST(ProgramTest, TotalCostSumsOpCostsOnBounds) {
  ProgramBuilder b("c");
  Value x = *b.Parameter(DType::kF32, Shape({8, 16}), 0b1);
  Value w = *b.Constant(Tensor::Zeros(DType::kF32, Shape({16, 4})));
  Value y = *b.MatMul(x, w);
  Value r = *b.Relu(y);
  Program p = *std::move(b).Build({r});
  EXPECT_EQ(p.CostOf(y).flops, 2 * 8 * 16 * 4);
  EXPECT_EQ(p.CostOf(r).flops, 32);
  OpCost total = p.TotalCost();
  EXPECT_EQ(total.flops, 2 * 8 * 16 * 4 + 32);
  EXPECT_EQ(total.bytes_read, (8 * 16 + 16 * 4) * 4 + 32 * 4);
  EXPECT_EQ(total.bytes_written, 32 * 4 * 2);
}

}  // namespace
// Issue 7: sizes from a proto are checked before anything is allocated, and
// never wrap ([2^32, 2^32] is not 0 elements).
TEST(ProgramTest, ParsingChecksLiteralAndVariableSizes) {
  proto::ProgramProto pb;
  pb.set_name("p");
  pb.set_num_replicas(1);
  pb.set_num_cores_per_replica(1);
  proto::OpProto* op = pb.add_ops();
  op->set_op("constant");
  op->mutable_literal()->set_dtype("float32");
  op->mutable_literal()->add_dims(int64_t{1} << 32);
  op->mutable_literal()->add_dims(int64_t{1} << 32);
  EXPECT_THAT(Program::FromProto(pb),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "program p op %0: shape [4294967296,4294967296] has "
                       "more than 2^63-1 elements (the product of its "
                       "dimensions overflows int64)"));
  // Representable but huge, with no payload: rejected without allocating 4 TiB.
  op->mutable_literal()->clear_dims();
  op->mutable_literal()->add_dims(int64_t{1} << 40);
  EXPECT_THAT(Program::FromProto(pb),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "program p op %0: constant literal has 0 data bytes, "
                       "float32[1099511627776] needs 4398046511104"));
  proto::ProgramProto vars;
  vars.set_name("v");
  vars.set_num_replicas(1);
  vars.set_num_cores_per_replica(1);
  proto::VariableDeclProto* v = vars.add_variables();
  v->set_slot(0);
  v->set_dtype("int64");
  v->add_dims(int64_t{1} << 31);
  v->add_dims(int64_t{1} << 31);
  EXPECT_THAT(Program::FromProto(vars),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "variable slot 0: int64[2147483648,2147483648] has "
                       "4611686018427387904 elements of 8 bytes: more than "
                       "2^63-1 bytes"));
}

TEST(ProgramTest, DotAndConvPrecisionPrintsAndRoundTrips) {
  ProgramBuilder b("prec");
  Value x = *b.Parameter(DType::kF32, Shape({2, 3}));
  Value w = *b.Parameter(DType::kF32, Shape({3, 4}));
  Value d = *b.MatMul(x, w, false, false, Precision::kHigh);
  Value d0 = *b.MatMul(x, w);  // DEFAULT is not printed
  Value img = *b.Parameter(DType::kF32, Shape({1, 4, 4, 2}));
  Value f = *b.Parameter(DType::kF32, Shape({3, 3, 2, 5}));
  Value c = *b.Conv2D(img, f, {1, 1}, Padding::kValid, Precision::kHighest);
  Program p = *std::move(b).Build({d, d0, c});
  const std::string text = p.ToText();
  EXPECT_THAT(text, HasSubstr("%2 = f32[2,4] dot(%0, %1), lhs_contracting={1}, "
                              "rhs_contracting={0}, precision=HIGH\n"));
  EXPECT_THAT(text, HasSubstr("%3 = f32[2,4] dot(%0, %1), lhs_contracting={1}, "
                              "rhs_contracting={0}\n"));
  EXPECT_THAT(text, HasSubstr("conv2d(%4, %5), window_strides={1,1}, "
                              "padding=VALID, precision=HIGHEST\n"));
  proto::ProgramProto pb;
  p.ToProto(&pb);
  EXPECT_EQ(pb.ops(2).precision(), "HIGH");
  EXPECT_EQ(pb.ops(3).precision(), "");
  EXPECT_EQ(pb.ops(6).precision(), "HIGHEST");
  absl::StatusOr<Program> back = Program::FromProto(pb);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->ToText(), text);
  EXPECT_EQ(back->ops()[2].attrs.precision, Precision::kHigh);
  EXPECT_EQ(back->ops()[3].attrs.precision, Precision::kDefault);
  EXPECT_EQ(back->ops()[6].attrs.precision, Precision::kHighest);
  // "DEFAULT" spelled out parses too.
  pb.mutable_ops(3)->set_precision("DEFAULT");
  ASSERT_THAT(Program::FromProto(pb), IsOk());
  // The values do not depend on it: the cost rule neither.
  EXPECT_EQ(p.CostOf(d).flops, p.CostOf(d0).flops);
}

TEST(ProgramTest, UnknownOrMisplacedPrecisionIsInvalidArgument) {
  ProgramBuilder b("prec");
  Value x = *b.Parameter(DType::kF32, Shape({2, 2}));
  Value d = *b.MatMul(x, x);
  Value y = *b.Add(d, d);
  Program p = *std::move(b).Build({y});
  proto::ProgramProto pb;
  p.ToProto(&pb);
  pb.mutable_ops(1)->set_precision("high");
  EXPECT_THAT(Program::FromProto(pb),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "program prec op %1: precision \"high\" is not DEFAULT, "
                       "HIGH or HIGHEST"));
  EXPECT_THAT(PrecisionFromName("BF16_3X"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "precision \"BF16_3X\" is not DEFAULT, HIGH or HIGHEST"));
  p.ToProto(&pb);
  pb.mutable_ops(2)->set_precision("HIGH");
  EXPECT_THAT(Program::FromProto(pb),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("precision=HIGH is only allowed on dot and "
                                 "conv2d")));
}

}  // namespace tpusim::runtime
