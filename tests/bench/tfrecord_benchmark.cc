// tests/bench/tfrecord_benchmark.cc
//
// Reading throughput of a TFRecord file of tf.train.Examples, beside a plain
// read of the same file in the same run:
//
// BM_PlainRead:           fread of the whole file in 1 MiB chunks (the floor:
//                         the file is in the page cache after it is written).
// BM_TFRecordRecords:     Dataset::TFRecord: framing, both CRC-32C checks and
//                         one string per record.
// BM_TFRecordParseSingle: + Map(ParseSingleExampleFn): one dict element per
//                         record (tf.io.parse_single_example).
// BM_TFRecordBatchParse:  + Batch(128) then Map(ParseExampleFn): the batched
//                         parse TF's input pipelines use (tf.io.parse_example).
//
// Every benchmark reports bytes/s of the file (bytes_per_second) and records/s
// (records_per_second). Each record is an Example with a float32[256] feature
// "x" (1 KiB of floats), an int64 "label" and a 16-byte bytes feature "id":
// about 1.1 KiB serialized; 65,536 of them, ~72 MB.
//
//   build/release/tests/bench/tfrecord_benchmark

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "common/check.h"
#include "strategy/data/dataset.h"
#include "strategy/data/example.pb.h"
#include "strategy/data/example_parser.h"
#include "strategy/data/tfrecord.h"

namespace tpusim::data {
namespace {

using runtime::DType;
using runtime::Shape;

constexpr int kRecords = 64 * 1024;
constexpr int kFeatures = 256;
constexpr int64_t kBatch = 128;

struct TestFile {
  std::string path;
  int64_t bytes = 0;
};

// Written once per process, deterministically, removed at exit.
const TestFile& File() {
  static const TestFile* file = [] {
    auto* f = new TestFile;
    f->path = absl::StrCat(P_tmpdir, "/tpusim_tfrecord_benchmark_", getpid(),
                           ".tfrecord");
    absl::StatusOr<std::unique_ptr<TFRecordWriter>> w =
        TFRecordWriter::Open(f->path);
    TPUSIM_CHECK(w.ok()) << w.status();
    for (int r = 0; r < kRecords; ++r) {
      tensorflow::Example ex;
      auto& m = *ex.mutable_features()->mutable_feature();
      auto* x = m["x"].mutable_float_list();
      for (int i = 0; i < kFeatures; ++i)
        x->add_value(static_cast<float>((r * kFeatures + i) % 1000) * 0.5f);
      m["label"].mutable_int64_list()->add_value(r % 10);
      m["id"].mutable_bytes_list()->add_value(
          absl::StrCat("record-", 1000000 + r, "__"));
      TPUSIM_CHECK((*w)->Write(ex.SerializeAsString()).ok());
    }
    TPUSIM_CHECK((*w)->Close().ok());
    std::FILE* in = std::fopen(f->path.c_str(), "rb");
    TPUSIM_CHECK(in != nullptr);
    std::fseek(in, 0, SEEK_END);
    f->bytes = std::ftell(in);
    std::fclose(in);
    std::atexit([] { std::remove(File().path.c_str()); });
    return f;
  }();
  return *file;
}

FeatureSpec Spec() {
  return {{"x", FixedLenFeature{DType::kF32, Shape({kFeatures}), {}}},
          {"label", FixedLenFeature{DType::kI64, Shape(), {}}},
          {"id", FixedLenFeature{DType::kBytes, Shape(), {}}}};
}

void Report(benchmark::State& state) {
  state.SetBytesProcessed(File().bytes * state.iterations());
  state.counters["records_per_second"] =
      benchmark::Counter(static_cast<double>(kRecords) * state.iterations(),
                         benchmark::Counter::kIsRate);
}

void BM_PlainRead(benchmark::State& state) {
  const TestFile& file = File();
  std::vector<char> buffer(1 << 20);
  for (auto _ : state) {
    std::FILE* in = std::fopen(file.path.c_str(), "rb");
    TPUSIM_CHECK(in != nullptr);
    int64_t total = 0;
    size_t n;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), in)) > 0) {
      total += static_cast<int64_t>(n);
      benchmark::DoNotOptimize(buffer.data());
    }
    std::fclose(in);
    TPUSIM_CHECK(total == file.bytes) << total;
  }
  Report(state);
}
BENCHMARK(BM_PlainRead)->Unit(benchmark::kMillisecond)->UseRealTime();

// Iterates `ds` to the end; returns the number of elements.
int64_t Drain(const Dataset& ds) {
  absl::StatusOr<IteratorPtr> it = ds.MakeIterator();
  TPUSIM_CHECK(it.ok()) << it.status();
  int64_t n = 0;
  while (true) {
    absl::StatusOr<std::optional<Element>> e = (*it)->GetNext();
    TPUSIM_CHECK(e.ok()) << e.status();
    if (!e->has_value()) break;
    benchmark::DoNotOptimize(&**e);
    ++n;
  }
  return n;
}

void BM_TFRecordRecords(benchmark::State& state) {
  const Dataset ds = Dataset::TFRecord({File().path});
  for (auto _ : state) TPUSIM_CHECK(Drain(ds) == kRecords);
  Report(state);
}
BENCHMARK(BM_TFRecordRecords)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TFRecordParseSingle(benchmark::State& state) {
  const Dataset ds =
      Dataset::TFRecord({File().path}).Map(ParseSingleExampleFn(Spec()));
  for (auto _ : state) TPUSIM_CHECK(Drain(ds) == kRecords);
  Report(state);
}
BENCHMARK(BM_TFRecordParseSingle)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TFRecordBatchParse(benchmark::State& state) {
  const Dataset ds = Dataset::TFRecord({File().path})
                         .Batch(kBatch)
                         .Map(ParseExampleFn(Spec()));
  for (auto _ : state) TPUSIM_CHECK(Drain(ds) == kRecords / kBatch);
  Report(state);
}
BENCHMARK(BM_TFRecordBatchParse)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tpusim::data
