// Programs the emitter tests share: the golden-text test and the plugin test
// (which compiles and runs them on XLA's CPU plugin against HostBackend).

#ifndef TPUSIM_TESTS_STRATEGY_RUNTIME_PJRT_EMITTER_PROGRAMS_H_
#define TPUSIM_TESTS_STRATEGY_RUNTIME_PJRT_EMITTER_PROGRAMS_H_

#include <vector>

#include "strategy/runtime/program.h"

namespace tpusim::runtime::pjrt::testing {

// One SGD step of y = tanh(x w + b) on f32[<=4,3] rows (2 replicas): the
// gradient all-reduced with MEAN, the weights updated in place.
inline Program MlpStep() {
  ProgramBuilder b("mlp_step", 2);
  (void)b.DeclareVariable(0, DType::kF32, Shape({3, 2}), "w");
  (void)b.DeclareVariable(1, DType::kF32, Shape({2}), "b");
  Value x = *b.Parameter(DType::kF32, Shape({4, 3}), 0b1);
  Value t = *b.Parameter(DType::kF32, Shape({4, 2}), 0b1);
  Value w = *b.VariableRead(0);
  Value bias = *b.VariableRead(1);
  Value y = *b.Tanh(*b.Add(*b.MatMul(x, w), bias));
  Value d = *b.Sub(y, t);
  Value loss = *b.ReduceMean(*b.Mul(d, d), {0, 1});
  Value two = *b.Constant(Tensor::Scalar<float>(2.0f));
  Value dz = *b.Mul(*b.Mul(two, d), *b.Sub(*b.Constant(Tensor::Scalar<float>(1.0f)), *b.Mul(y, y)));
  Value gw = *b.AllReduce(*b.MatMul(x, dz, /*transpose_a=*/true), CollectiveReduce::kMean);
  Value gb = *b.AllReduce(*b.ReduceSum(dz, {0}), CollectiveReduce::kMean);
  Value lr = *b.Constant(Tensor::Scalar<float>(0.1f));
  (void)*b.VariableAssign(0, *b.Sub(w, *b.Mul(lr, gw)));
  (void)*b.VariableAssignAdd(1, *b.Neg(*b.Mul(lr, gb)));
  return *std::move(b).Build({loss});
}

// Data movement, predicates and every collective (2 replicas, static shapes).
inline Program Movement() {
  ProgramBuilder b("movement", 2);
  Value x = *b.Parameter(DType::kF32, Shape({4, 2}));
  Value idx = *b.Parameter(DType::kI32, Shape({3}));
  Value g = *b.Gather(x, idx, 0);                       // f32[3,2]
  Value oh = *b.OneHot(idx, 4);                          // f32[3,4]
  Value sc = *b.ScatterAdd(x, idx, g, 0);                // f32[4,2]
  Value tr = *b.Transpose(sc, {1, 0});                   // f32[2,4]
  Value sl = *b.Slice(tr, {0, 1}, {2, 4});               // f32[2,3]
  Value cat = *b.Concat({sl, sl}, 1);                    // f32[2,6]
  Value sm = *b.Softmax(cat);
  Value mx = *b.ReduceMax(cat, {1}, /*keepdims=*/true);  // f32[2,1]
  Value gt = *b.Compare(cat, mx, Comparison::kGe);       // u8[2,6]
  Value sel = *b.Select(gt, cat, *b.Constant(Tensor::Scalar<float>(-1.0f)));
  Value ag = *b.AllGather(sel, 0);                       // f32[4,6]
  Value rs = *b.ReduceScatter(ag, CollectiveReduce::kSum, 1);  // f32[4,3]
  Value a2a = *b.AllToAll(rs, 0, 1);                     // f32[2,6]
  Value cp = *b.CollectivePermute(a2a, {{0, 1}, {1, 0}});
  Value bf = *b.Cast(*b.Cast(cp, DType::kBF16), DType::kF32);
  Value r = *b.Reshape(*b.Broadcast(*b.Exp(*b.Neg(bf)), {3, 2, 6}), {-1});
  Value id = *b.Cast(b.ReplicaId(), DType::kI64);
  return *std::move(b).Build({oh, sm, r, id});
}

// conv2d, max_pool2d and their gradients, SAME and VALID, strides 1 and 2
// (1 replica).
inline Program Windowed() {
  ProgramBuilder b("windowed", 1);
  Value x = *b.Parameter(DType::kF32, Shape({2, 5, 5, 3}));
  Value f = *b.Parameter(DType::kF32, Shape({3, 3, 3, 4}));
  Value y_same = *b.Conv2D(x, f, {2, 2}, Padding::kSame);    // [2,3,3,4]
  Value y_valid = *b.Conv2D(x, f, {1, 1}, Padding::kValid);  // [2,3,3,4]
  Value dx = *b.Conv2DBackpropInput(y_same, f, {2, 5, 5, 3}, {2, 2}, Padding::kSame);
  Value df = *b.Conv2DBackpropFilter(x, y_valid, {3, 3, 3, 4}, {1, 1}, Padding::kValid);
  Value df2 = *b.Conv2DBackpropFilter(x, y_same, {3, 3, 3, 4}, {2, 2}, Padding::kSame);
  Value mp = *b.MaxPool2D(x, {3, 3}, {2, 2}, Padding::kSame);  // [2,3,3,3]
  Value mpg = *b.MaxPool2DGrad(x, mp, {3, 3}, {2, 2}, Padding::kSame);
  Value mpv = *b.MaxPool2D(x, {2, 2}, {2, 2}, Padding::kValid);  // [2,2,2,3]
  Value mpvg = *b.MaxPool2DGrad(x, mpv, {2, 2}, {2, 2}, Padding::kValid);
  return *std::move(b).Build({y_same, y_valid, dx, df, df2, mp, mpg, mpv, mpvg});
}

// 2 replicas x 2 logical cores: core 1 holds a variable and computes on the
// parameter of core 0; core 0 all-reduces what core 1 sent and adds the
// replica id; core 1 all-gathers its own values.
inline Program TwoCores() {
  ProgramBuilder b("two_cores", 2, 2);
  Value x = *b.Parameter(DType::kF32, Shape({2}));  // core 0
  (void)b.set_logical_core(1);
  (void)b.DeclareVariable(0, DType::kF32, Shape({2}), "acc");
  Value w = *b.VariableRead(0);
  Value y = *b.Mul(x, w);               // x moves from core 0 to core 1
  Value acc = *b.VariableAssignAdd(0, y);
  Value g = *b.AllGather(y, 0);         // among the core-1 devices
  (void)b.set_logical_core(0);
  Value s = *b.AllReduce(y, CollectiveReduce::kSum);  // y moves back to core 0
  Value id = *b.Cast(b.ReplicaId(), DType::kF32);
  Value out = *b.Add(s, id);
  return *std::move(b).Build({out, acc, g});
}

}  // namespace tpusim::runtime::pjrt::testing

#endif  // TPUSIM_TESTS_STRATEGY_RUNTIME_PJRT_EMITTER_PROGRAMS_H_
