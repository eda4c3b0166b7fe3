// tests/examples/train_loop.cc
//
// A training loop written the way a TensorFlow user writes it with TPUStrategy:
//
//   resolver = tf.distribute.cluster_resolver.TPUClusterResolver("v3-8")
//   strategy = tf.distribute.experimental.TPUStrategy(resolver)
//   with strategy.scope():
//     w = tf.Variable(...); b = tf.Variable(...)
//   dist = strategy.experimental_distribute_dataset(dataset)
//   for x, t in dist:
//     per_example_loss = strategy.run(train_step, args=(x, t))
//     loss = strategy.reduce("MEAN", per_example_loss, axis=0)
//
// The input is a real TFRecord pipeline: Examples written to temporary files,
// read with Dataset::TFRecord, parsed, batched with the global batch size and
// distributed.
//
// A linear regression y = x w + b trained with SGD; the gradient of each
// replica is scaled by the GLOBAL batch size and all-reduced with SUM
// (tf.nn.compute_average_loss style), so the last, partial batch (some replicas
// get an empty dummy batch) is handled exactly. Exits 0 when every step's
// reduced loss is finite, the loss went down, and the final weights of EVERY
// replica equal those of single-device SGD on the same global batches in
// double precision (within 1e-4 relative): without the all-reduce each replica
// would follow its own rows and the check fails.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scenarios/backend_registry.h"
#include "strategy/cluster_resolver.h"
#include "strategy/data/dataset.h"
#include "strategy/data/example.pb.h"
#include "strategy/data/example_parser.h"
#include "strategy/data/tfrecord.h"
#include "strategy/distributed_input.h"
#include "strategy/input_iterator.h"
#include "strategy/runtime/host_backend.h"
#include "strategy/runtime/slice.h"
#include "strategy/tpu_strategy.h"

namespace {

using tpusim::runtime::DType;
using tpusim::runtime::Shape;
using tpusim::runtime::Tensor;
using tpusim::strategy::CreateVariable;
using tpusim::strategy::DistributedInputIterator;
using tpusim::strategy::InputIterator;
using tpusim::strategy::MirroredVariable;
using tpusim::strategy::PerReplica;
using tpusim::strategy::ReduceOp;
using tpusim::strategy::RegroupElement;
using tpusim::strategy::ReplicaContext;
using tpusim::strategy::ReplicaElement;
using tpusim::strategy::StepFunction;
using tpusim::strategy::StrategyScope;
using tpusim::strategy::TPUClusterResolver;
using tpusim::strategy::TPUStrategy;
using tpusim::strategy::TracedNest;
using tpusim::strategy::TracedValue;
using tpusim::strategy::Value;
using tpusim::strategy::ValueNest;

constexpr int kFeatures = 3;
constexpr int kExamples = 100;
constexpr int kGlobalBatch = 32;
constexpr int kEpochs = 5;
constexpr float kLearningRate = 0.2f;

// Example i: features x_i and target t_i = x_i . (1, -2, 0.5) + 0.3.
void MakeExample(int i, std::vector<float>& x, float& t) {
  const float true_w[kFeatures] = {1.f, -2.f, 0.5f};
  t = 0.3f;
  for (int k = 0; k < kFeatures; ++k) {
    const float v = std::sin(0.37f * (i * kFeatures + k) + 0.1f * k);
    x.push_back(v);
    t += v * true_w[k];
  }
}

// Single-device SGD in double precision on the same global batches (examples
// in file order, batches of kGlobalBatch, the last one partial, every gradient
// scaled by the global batch size): the final (w0, w1, w2, b).
std::vector<double> ReferenceWeights() {
  std::vector<double> w(kFeatures, 0.0);
  double b = 0.0;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    for (int start = 0; start < kExamples; start += kGlobalBatch) {
      std::vector<double> gw(kFeatures, 0.0);
      double gb = 0.0;
      for (int i = start; i < std::min(kExamples, start + kGlobalBatch); ++i) {
        std::vector<float> x;
        float t;
        MakeExample(i, x, t);
        double y = b;
        for (int k = 0; k < kFeatures; ++k) y += x[k] * w[k];
        const double dy = 2.0 * (y - t) / kGlobalBatch;
        for (int k = 0; k < kFeatures; ++k) gw[k] += x[k] * dy;
        gb += dy;
      }
      for (int k = 0; k < kFeatures; ++k) w[k] -= kLearningRate * gw[k];
      b -= kLearningRate * gb;
    }
  }
  w.push_back(b);
  return w;
}

// ===================================================================================
// INPUT PIPELINE: TFRecord files of tf.train.Example records {x: float[3], t:
// float[1]}, parsed, batched with the GLOBAL batch size and distributed by the
// strategy (rebatch to kGlobalBatch / N per replica; the last partial batch
// gives some replicas empty batches).
absl::StatusOr<std::vector<std::string>> WriteTrainingFiles() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/tpusim_train_loop_XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp failed for ", dir));
  }
  std::vector<std::string> files;
  constexpr int kFiles = 2;
  for (int f = 0; f < kFiles; ++f) {
    std::vector<std::string> records;
    for (int i = f * kExamples / kFiles; i < (f + 1) * kExamples / kFiles;
         ++i) {
      std::vector<float> x;
      float t;
      MakeExample(i, x, t);
      tensorflow::Example example;
      auto& feature = *example.mutable_features()->mutable_feature();
      for (float v : x) feature["x"].mutable_float_list()->add_value(v);
      feature["t"].mutable_float_list()->add_value(t);
      records.push_back(example.SerializeAsString());
    }
    files.push_back(absl::StrCat(dir, "/train-", f, ".tfrecord"));
    TPUSIM_RETURN_IF_ERROR(
        tpusim::data::WriteTFRecordFile(files.back(), records));
  }
  return files;
}

absl::StatusOr<std::unique_ptr<InputIterator>> MakeInputIterator(
    const TPUStrategy& strategy, const std::vector<std::string>& files) {
  const tpusim::data::FeatureSpec spec = {
      {"x", tpusim::data::FixedLenFeature{DType::kF32, Shape({kFeatures})}},
      {"t", tpusim::data::FixedLenFeature{DType::kF32, Shape({1})}}};
  const tpusim::data::Dataset dataset =
      tpusim::data::Dataset::TFRecord(files)
          .Map(tpusim::data::ParseSingleExampleFn(spec))
          .Batch(kGlobalBatch);
  TPUSIM_ASSIGN_OR_RETURN(tpusim::data::DistributedDataset dist,
                          strategy.ExperimentalDistributeDataset(dataset));
  TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<DistributedInputIterator> it,
                          DistributedInputIterator::Create(dist));
  return std::unique_ptr<InputIterator>(std::move(it));
}
// ===================================================================================

absl::Status Main(const std::string& backend_name) {
  // 1. The TPU: a v3-8 slice on the functional host backend ("host", the
  // default) or on the simulated pod ("sim").
  TPUSIM_ASSIGN_OR_RETURN(
      std::unique_ptr<tpusim::runtime::Backend> backend_ptr,
      tpusim::scenarios::CreateBackend(backend_name, "v3-8"));
  tpusim::runtime::Backend& backend = *backend_ptr;
  TPUSIM_ASSIGN_OR_RETURN(TPUClusterResolver resolver,
                          TPUClusterResolver::Create(backend, "v3-8"));
  TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<TPUStrategy> strategy,
                          TPUStrategy::Create(backend, resolver));
  std::printf("num_replicas_in_sync = %d\n", strategy->num_replicas_in_sync());

  // 2. Variables in scope: mirrored on every replica.
  MirroredVariable* w = nullptr;
  MirroredVariable* b = nullptr;
  {
    TPUSIM_ASSIGN_OR_RETURN(StrategyScope scope, strategy->Scope());
    TPUSIM_ASSIGN_OR_RETURN(
        w, CreateVariable(Tensor::Zeros(DType::kF32, Shape({kFeatures, 1})),
                          {"dense/kernel"}));
    TPUSIM_ASSIGN_OR_RETURN(
        b,
        CreateVariable(Tensor::Zeros(DType::kF32, Shape({1})), {"dense/bias"}));
  }
  std::printf(
      "variables: %s (%d components: %s ... %s), %s\n", w->name().c_str(),
      w->num_components(), w->component_name(0).c_str(),
      w->component_name(w->num_components() - 1).c_str(), b->name().c_str());

  // 3. The train step (a tf.function): forward, explicit gradients, all-reduce,
  // SGD update.
  StepFunction train_step(
      [w, b](ReplicaContext& ctx,
             const TracedNest& args) -> absl::StatusOr<TracedNest> {
        // The element is the dict {t: [B, 1], x: [B, 3]} (children in sorted
        // key order).
        const TracedValue t = args.children()[0].children()[0].leaf();
        const TracedValue x = args.children()[0].children()[1].leaf();
        TPUSIM_ASSIGN_OR_RETURN(TracedValue wv, ctx.ReadVariable(*w));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue bv, ctx.ReadVariable(*b));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue xw, ctx.MatMul(x, wv));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue y, ctx.Add(xw, bv));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue d, ctx.Sub(y, t));  // [B, 1]
        TPUSIM_ASSIGN_OR_RETURN(TracedValue d2, ctx.Mul(d, d));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue per_example,
                                ctx.ReduceSum(d2, {1}));  // [B]
        // d(sum of squared errors / global batch)/dy.
        TPUSIM_ASSIGN_OR_RETURN(TracedValue scale,
                                ctx.ScalarConstant(2.0 / kGlobalBatch));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue dy, ctx.Mul(d, scale));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue dw,
                                ctx.MatMul(x, dy, /*transpose_a=*/true));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue db, ctx.ReduceSum(dy, {0}));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue dw_all,
                                ctx.AllReduce(ReduceOp::kSum, dw));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue db_all,
                                ctx.AllReduce(ReduceOp::kSum, db));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue lr,
                                ctx.ScalarConstant(kLearningRate));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue dw_step, ctx.Mul(dw_all, lr));
        TPUSIM_ASSIGN_OR_RETURN(TracedValue db_step, ctx.Mul(db_all, lr));
        TPUSIM_RETURN_IF_ERROR(ctx.AssignSubVariable(*w, dw_step).status());
        TPUSIM_RETURN_IF_ERROR(ctx.AssignSubVariable(*b, db_step).status());
        return TracedNest(per_example);
      },
      "train_step");

  // 4. The loop: iterate the distributed input, run, reduce the loss with MEAN
  // over axis 0.
  TPUSIM_ASSIGN_OR_RETURN(std::vector<std::string> files, WriteTrainingFiles());
  double first_loss = -1, last_loss = -1;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<InputIterator> it,
                            MakeInputIterator(*strategy, files));
    int step = 0;
    while (true) {
      absl::StatusOr<PerReplica<ReplicaElement>> element = it->GetNext();
      if (absl::IsOutOfRange(element.status())) break;
      TPUSIM_RETURN_IF_ERROR(element.status());
      TPUSIM_ASSIGN_OR_RETURN(ValueNest inputs, RegroupElement(*element));
      TPUSIM_ASSIGN_OR_RETURN(
          ValueNest per_example_loss,
          strategy->Run(train_step, ValueNest::Tuple({inputs})));
      TPUSIM_ASSIGN_OR_RETURN(
          Value loss,
          strategy->Reduce("MEAN", per_example_loss.leaf(), /*axis=*/0));
      const double value = loss.tensor().AsDouble(0);
      if (!std::isfinite(value))
        return absl::InternalError("loss is not finite");
      if (first_loss < 0) first_loss = value;
      last_loss = value;
      std::printf("epoch %d step %d: loss %.6f\n", epoch, step++, value);
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(std::filesystem::path(files[0]).parent_path(),
                              ignored);
  TPUSIM_ASSIGN_OR_RETURN(Tensor final_w, w->Read());
  std::printf("final w = [%.4f, %.4f, %.4f]; traces = %d\n",
              final_w.AsDouble(0), final_w.AsDouble(1), final_w.AsDouble(2),
              strategy->num_traces());
  if (!(last_loss < first_loss)) {
    return absl::InternalError(
        absl::StrCat("loss did not decrease: ", first_loss, " -> ", last_loss));
  }
  const std::vector<double> want = ReferenceWeights();
  TPUSIM_ASSIGN_OR_RETURN(std::vector<Tensor> ws, w->ReadComponents());
  TPUSIM_ASSIGN_OR_RETURN(std::vector<Tensor> bs, b->ReadComponents());
  for (size_t r = 0; r < ws.size(); ++r) {
    for (int k = 0; k <= kFeatures; ++k) {
      const double got = k < kFeatures ? ws[r].AsDouble(k) : bs[r].AsDouble(0);
      if (!(std::fabs(got - want[k]) <=
            1e-4 * std::max(1.0, std::fabs(want[k])))) {
        return absl::InternalError(
            absl::StrCat("replica ", r, ": final ", k < kFeatures ? "w[" : "b[",
                         k < kFeatures ? k : 0, "] = ", got,
                         ", single-device SGD gives ", want[k]));
      }
    }
  }
  std::printf("final weights of all %zu replicas match single-device SGD\n",
              ws.size());
  // On a timing backend: where the simulated time went.
  absl::StatusOr<tpusim::runtime::Profile> profile = backend.CollectProfile();
  if (profile.ok() && profile->steps_size() > 0) {
    const auto& last = profile->steps(profile->steps_size() - 1);
    std::printf("simulated: %d device calls, %.3f ms in all, last call %.3f ms\n",
                profile->steps_size(), profile->end_ps() * 1e-9,
                (last.end_ps() - last.start_ps()) * 1e-9);
  }
  return absl::OkStatus();
}

}  // namespace

// The example links the pod model (SystemC), so its entry point is sc_main
// (architecture.md): `train_loop_example [host|sim]`.
extern "C" int sc_main(int argc, char* argv[]) {
  const std::string backend = argc > 1 ? argv[1] : "host";
  absl::Status status = Main(backend);
  if (!status.ok()) {
    std::fprintf(stderr, "train_loop: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
