// sim/lower: the precision attribute of dot and conv2d reaches the timing.

#include "sim/lower.h"

#include "gtest/gtest.h"
#include "strategy/runtime/program.h"

namespace tpusim::sim {
namespace {

using runtime::DType;
using runtime::Shape;
using runtime::Value;

TEST(LowerTest, DotAndConvCarryTheirPrecision) {
  runtime::ProgramBuilder b("p");
  Value x = *b.Parameter(DType::kF32, Shape({4, 8}));
  Value w = *b.Parameter(DType::kF32, Shape({8, 2}));
  Value d0 = *b.MatMul(x, w);
  Value d1 = *b.MatMul(x, w, false, false, runtime::Precision::kHigh);
  Value img = *b.Parameter(DType::kF32, Shape({1, 4, 4, 2}));
  Value f = *b.Parameter(DType::kF32, Shape({3, 3, 2, 5}));
  Value c = *b.Conv2D(img, f, {1, 1}, runtime::Padding::kValid,
                      runtime::Precision::kHighest);
  const runtime::Program p = *std::move(b).Build({d0, d1, c});
  const LoweredProgram l = Lower(p);
  EXPECT_EQ(l.ops[d0.id].work.matmuls.at(0).precision, Precision::kDefault);
  EXPECT_EQ(l.ops[d1.id].work.matmuls.at(0).precision, Precision::kHigh);
  EXPECT_EQ(l.ops[c.id].work.matmuls.at(0).precision, Precision::kHighest);
  EXPECT_EQ(l.ops[c.id].work.matmuls.at(0).m, 1 * 2 * 2);
  EXPECT_EQ(l.ops[c.id].work.matmuls.at(0).k, 3 * 3 * 2);
  EXPECT_EQ(l.ops[c.id].work.matmuls.at(0).n, 5);
}

}  // namespace
}  // namespace tpusim::sim
