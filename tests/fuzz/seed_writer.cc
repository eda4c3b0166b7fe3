// tests/fuzz/seed_writer.cc
//
// Writes the generated part of the fuzz seed corpus: small TFRecord files,
// serialized tf.train.Examples and ProgramProto text protos covering every op.
// The output is checked in under tests/fuzz/corpus/; rerun after changing a
// format:
//
//   build/release/tests/fuzz/fuzz_seed_writer tests/fuzz/corpus
//
// (The scenario seeds are hand-written; tools/fuzz.sh adds
// scenarios/*.textproto.) Deterministic: the same build writes byte-identical
// files.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "strategy/data/example.pb.h"
#include "strategy/data/tfrecord.h"
#include "strategy/runtime/program.h"
#include "strategy/runtime/program.pb.h"

namespace tpusim::fuzz {
namespace {

using runtime::CollectiveReduce;
using runtime::DType;
using runtime::Padding;
using runtime::Program;
using runtime::ProgramBuilder;
using runtime::Shape;
using runtime::Tensor;
using runtime::Value;

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

// ---- TFRecord files ----

void WriteTFRecords(const std::string& dir) {
  auto file = [](std::vector<std::string> records) {
    std::string out;
    for (const std::string& r : records) out += data::EncodeTFRecord(r);
    return out;
  };
  Write(dir + "/empty_file", "");
  Write(dir + "/one_empty_record", file({""}));
  Write(dir + "/three_records", file({"a", "bc", "def"}));
  Write(dir + "/binary_record", file({std::string("\0\xff\x01\x80", 4)}));
  Write(dir + "/record_256_bytes", file({std::string(256, 'x'), "y"}));
  // Damaged files: a cut data crc, a cut header, a flipped data byte.
  const std::string two = file({"hello", "world"});
  Write(dir + "/truncated_footer", two.substr(0, two.size() - 2));
  Write(dir + "/truncated_header", two.substr(0, 21 + 5));
  std::string flipped = two;
  flipped[13] ^= 0x01;
  Write(dir + "/corrupted_data", flipped);
}

// ---- tf.train.Example ----

void WriteExamples(const std::string& dir) {
  auto save = [&](const std::string& name, const tensorflow::Example& ex) {
    // Deterministic: map entries sorted by key.
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream stream(&bytes);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      ex.SerializeToCodedStream(&coded);
    }
    Write(dir + "/" + name, bytes);
  };
  tensorflow::Example ex;
  save("empty_example", ex);

  // The first spec of example_harness.cc: x float[2], label int64, id bytes.
  auto& f = *ex.mutable_features()->mutable_feature();
  f["x"].mutable_float_list()->add_value(0.5f);
  f["x"].mutable_float_list()->add_value(-2.0f);
  f["label"].mutable_int64_list()->add_value(7);
  f["id"].mutable_bytes_list()->add_value("id-1");
  save("x_label_id", ex);
  // The same with features no spec asks for.
  f["extra"].mutable_bytes_list()->add_value("unused");
  f["n"].mutable_float_list()->add_value(1.0f);
  save("x_label_id_extra", ex);

  // The second spec: x float[3], n int64[2,2], s bytes[1].
  tensorflow::Example full;
  auto& g = *full.mutable_features()->mutable_feature();
  for (float v : {1.0f, 2.0f, 3.0f}) g["x"].mutable_float_list()->add_value(v);
  for (int64_t v : {int64_t{1}, int64_t{-1}, int64_t{1} << 40, int64_t{0}}) {
    g["n"].mutable_int64_list()->add_value(v);
  }
  g["s"].mutable_bytes_list()->add_value(std::string("\0\x01", 2));
  save("x_n_s", full);

  // Wrong kind, wrong count, an empty feature (no kind set).
  tensorflow::Example bad;
  auto& h = *bad.mutable_features()->mutable_feature();
  h["x"].mutable_int64_list()->add_value(1);
  h["label"].mutable_int64_list()->add_value(1);
  h["label"].mutable_int64_list()->add_value(2);
  h["id"];
  save("wrong_kind_and_count", bad);
}

// ---- ProgramProto text protos ----

void SaveProgram(const std::string& dir, const std::string& name,
                 absl::StatusOr<Program> program) {
  if (!program.ok()) {
    std::fprintf(stderr, "program %s: %s\n", name.c_str(),
                 program.status().ToString().c_str());
    std::exit(1);
  }
  proto::ProgramProto pb;
  program->ToProto(&pb);
  std::string text;
  google::protobuf::TextFormat::PrintToString(pb, &text);
  Write(dir + "/" + name + ".textproto", text);
}

// A dense layer trained with an all-reduced gradient step: parameters,
// variables, dot, elementwise ops, reductions, collectives.
absl::StatusOr<Program> DenseStep() {
  ProgramBuilder b("dense_step", /*num_replicas=*/4);
  TPUSIM_ASSIGN_OR_RETURN(Value x,
                          b.Parameter(DType::kF32, Shape({8, 4}), 0b1));
  TPUSIM_ASSIGN_OR_RETURN(Value y, b.Parameter(DType::kI32, Shape({8}), 0b1));
  TPUSIM_RETURN_IF_ERROR(b.DeclareVariable(0, DType::kF32, Shape({4, 3}), "w"));
  TPUSIM_ASSIGN_OR_RETURN(Value w, b.VariableRead(0));
  TPUSIM_ASSIGN_OR_RETURN(Value logits, b.MatMul(x, w));
  TPUSIM_ASSIGN_OR_RETURN(Value p, b.Softmax(logits));
  TPUSIM_ASSIGN_OR_RETURN(Value onehot, b.OneHot(y, 3));
  TPUSIM_ASSIGN_OR_RETURN(Value diff, b.Sub(p, onehot));
  TPUSIM_ASSIGN_OR_RETURN(Value grad, b.MatMul(x, diff, /*transpose_a=*/true));
  TPUSIM_ASSIGN_OR_RETURN(Value mean,
                          b.AllReduce(grad, CollectiveReduce::kMean));
  TPUSIM_ASSIGN_OR_RETURN(Value lr, b.Constant(Tensor::Scalar<float>(-0.1f)));
  TPUSIM_ASSIGN_OR_RETURN(Value step, b.Mul(mean, lr));
  TPUSIM_ASSIGN_OR_RETURN(Value neww, b.VariableAssignAdd(0, step));
  TPUSIM_ASSIGN_OR_RETURN(Value loss, b.ReduceMean(diff, {0, 1}));
  const Value rid = b.ReplicaId();
  return std::move(b).Build({loss, neww, rid});
}

// Unary ops, cast, binary ops with broadcasting, reductions, max.
absl::StatusOr<Program> Elementwise() {
  ProgramBuilder b("elementwise");
  TPUSIM_ASSIGN_OR_RETURN(Value x, b.Parameter(DType::kF32, Shape({2, 3})));
  TPUSIM_ASSIGN_OR_RETURN(
      Value c, b.Constant(Tensor::Vector<float>({1.0f, 2.0f, 3.0f})));
  TPUSIM_ASSIGN_OR_RETURN(Value v, b.Add(x, c));
  TPUSIM_ASSIGN_OR_RETURN(v, b.Neg(v));
  TPUSIM_ASSIGN_OR_RETURN(v, b.Exp(v));
  TPUSIM_ASSIGN_OR_RETURN(v, b.Log(v));
  TPUSIM_ASSIGN_OR_RETURN(v, b.Tanh(v));
  TPUSIM_ASSIGN_OR_RETURN(v, b.Relu(v));
  TPUSIM_ASSIGN_OR_RETURN(v, b.Sigmoid(v));
  TPUSIM_ASSIGN_OR_RETURN(v, b.Sqrt(v));
  TPUSIM_ASSIGN_OR_RETURN(v, b.Rsqrt(v));
  TPUSIM_ASSIGN_OR_RETURN(v, b.Div(v, x));
  TPUSIM_ASSIGN_OR_RETURN(v, b.Max(v, x));
  TPUSIM_ASSIGN_OR_RETURN(v, b.Min(v, x));
  TPUSIM_ASSIGN_OR_RETURN(Value bf, b.Cast(v, DType::kBF16));
  TPUSIM_ASSIGN_OR_RETURN(Value i, b.Cast(bf, DType::kI64));
  TPUSIM_ASSIGN_OR_RETURN(Value s, b.ReduceSum(i, {-1}, /*keepdims=*/true));
  TPUSIM_ASSIGN_OR_RETURN(Value m, b.ReduceMax(v, {0}));
  return std::move(b).Build({s, m});
}

// Data movement: reshape, transpose, broadcast, slice, concat, gather.
absl::StatusOr<Program> DataMovement() {
  ProgramBuilder b("data_movement");
  TPUSIM_ASSIGN_OR_RETURN(Value x, b.Parameter(DType::kI32, Shape({2, 6})));
  TPUSIM_ASSIGN_OR_RETURN(Value r, b.Reshape(x, {3, -1}));
  TPUSIM_ASSIGN_OR_RETURN(Value t, b.Transpose(r, {1, 0}));
  TPUSIM_ASSIGN_OR_RETURN(Value bc, b.Broadcast(t, {2, 4, 3}));
  TPUSIM_ASSIGN_OR_RETURN(Value s,
                          b.Slice(bc, {0, 1, 0}, {2, 4, 3}, {1, 2, 2}));
  TPUSIM_ASSIGN_OR_RETURN(Value c, b.Concat({s, s}, 1));
  TPUSIM_ASSIGN_OR_RETURN(Value idx,
                          b.Constant(Tensor::Vector<int32_t>({1, 0, 1})));
  TPUSIM_ASSIGN_OR_RETURN(Value g, b.Gather(c, idx, 0));
  TPUSIM_ASSIGN_OR_RETURN(Value str,
                          b.Constant(Tensor::Vector<std::string>({"a", "bc"})));
  TPUSIM_ASSIGN_OR_RETURN(
      Value abs, b.Constant(Tensor::Abstract(DType::kU8, Shape({2, 2}))));
  return std::move(b).Build({g, str, abs});
}

// Convolution, pooling and a general dot with batch dimensions.
absl::StatusOr<Program> ConvPool() {
  ProgramBuilder b("conv_pool");
  TPUSIM_ASSIGN_OR_RETURN(Value img,
                          b.Parameter(DType::kF32, Shape({2, 8, 8, 3}), 0b1));
  TPUSIM_ASSIGN_OR_RETURN(Value k,
                          b.Parameter(DType::kF32, Shape({3, 3, 3, 4})));
  TPUSIM_ASSIGN_OR_RETURN(Value conv, b.Conv2D(img, k, {1, 1}, Padding::kSame));
  TPUSIM_ASSIGN_OR_RETURN(Value pool,
                          b.MaxPool2D(conv, {2, 2}, {2, 2}, Padding::kValid));
  TPUSIM_ASSIGN_OR_RETURN(Value a, b.Parameter(DType::kF64, Shape({5, 2, 3})));
  TPUSIM_ASSIGN_OR_RETURN(Value c, b.Parameter(DType::kF64, Shape({5, 3, 4})));
  runtime::DotDims dims;
  dims.lhs_batch = {0};
  dims.rhs_batch = {0};
  dims.lhs_contracting = {2};
  dims.rhs_contracting = {1};
  TPUSIM_ASSIGN_OR_RETURN(Value d, b.DotGeneral(a, c, dims));
  return std::move(b).Build({pool, d});
}

// Collectives with replica groups, on two logical cores.
absl::StatusOr<Program> Collectives() {
  ProgramBuilder b("collectives", /*num_replicas=*/4,
                   /*num_cores_per_replica=*/2);
  TPUSIM_ASSIGN_OR_RETURN(Value x, b.Parameter(DType::kBF16, Shape({4, 2})));
  TPUSIM_ASSIGN_OR_RETURN(
      Value ar, b.AllReduce(x, CollectiveReduce::kSum, {{0, 1}, {2, 3}}));
  TPUSIM_RETURN_IF_ERROR(b.set_logical_core(1));
  TPUSIM_ASSIGN_OR_RETURN(Value ag, b.AllGather(ar, 0, {{0, 2}, {1, 3}}));
  TPUSIM_ASSIGN_OR_RETURN(Value rs,
                          b.ReduceScatter(ag, CollectiveReduce::kMean, 0));
  TPUSIM_ASSIGN_OR_RETURN(
      Value cp, b.CollectivePermute(rs, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
  return std::move(b).Build({cp});
}

void WritePrograms(const std::string& dir) {
  SaveProgram(dir, "dense_step", DenseStep());
  SaveProgram(dir, "elementwise", Elementwise());
  SaveProgram(dir, "data_movement", DataMovement());
  SaveProgram(dir, "conv_pool", ConvPool());
  SaveProgram(dir, "collectives", Collectives());
}

}  // namespace
}  // namespace tpusim::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (e.g. tests/fuzz/corpus)\n",
                 argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  tpusim::fuzz::WriteTFRecords(root + "/tfrecord");
  tpusim::fuzz::WriteExamples(root + "/example");
  tpusim::fuzz::WritePrograms(root + "/program");
  return 0;
}
