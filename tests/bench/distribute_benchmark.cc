// tests/bench/distribute_benchmark.cc
//
// Input-pipeline throughput: 1 GiB of real float32 data as global batches of
// 1024 x 256 floats (1 MiB each), rebatched (TF 2.2 Case 1: batch(1024) to
// batch(128)) and distributed round-robin to 8 replicas on one worker, next to
// a plain memcpy of the same bytes in the same run. The ratio of the
// bytes/second figures is the pipeline's efficiency.
//
// BM_DistributeRebatchCopy1GiB: every per-replica batch is a fresh 128 KiB
// copy, as TF's batch kernel makes; compare this one with BM_Memcpy1GiB.
// BM_DistributeRebatch1GiB: rows in memory order, so batch() returns zero-copy
// views (zero_copy_fraction=1); this is the per-element cost of the pipeline.
// BM_BatchOnly1GiB: the same dataset nodes without rebatch and distribution.
//
//   build/release/tests/bench/distribute_benchmark
//
// Allocation: batch() copies into storage recycled through a per-iterator
// Tensor::BufferPool (a released batch's block is written again), so fresh
// blocks are not page-faulted in for every batch; before, with glibc's
// defaults, that was about 40% of the time. The caching-allocator setting
// once needed to model TF's allocator
//   MALLOC_MMAP_THRESHOLD_=268435456 MALLOC_TRIM_THRESHOLD_=1073741824
// no longer changes the figures much.

#include <cstring>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/check.h"
#include "strategy/data/dataset.h"
#include "strategy/data/distribute.h"

namespace tpusim::data {
namespace {

using runtime::Shape;
using runtime::Tensor;

constexpr int64_t kFeatures = 256;
constexpr int64_t kGlobalBatch = 1024;
constexpr int64_t kSourceRows =
    64 * 1024;                    // 64 MiB source, larger than any cache
constexpr int64_t kRepeats = 16;  // 16 × 64 MiB = 1 GiB per pass
constexpr int64_t kBytesPerPass =
    kSourceRows * kRepeats * kFeatures * sizeof(float);

const Tensor& Source() {
  static const Tensor* source = [] {
    std::vector<float> data(kSourceRows * kFeatures);
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = static_cast<float>(i % 1000);
    return new Tensor(
        Tensor::FromVector<float>(Shape({kSourceRows, kFeatures}), data));
  }();
  return *source;
}

void RunDistribute(benchmark::State& state, const Dataset& ds) {
  absl::StatusOr<DistributedDataset> dist = DistributeDataset(
      ds, InputWorkers::Uniform(/*num_workers=*/1, /*replicas_per_worker=*/8));
  TPUSIM_CHECK(dist.ok()) << dist.status();
  const float* source_begin = Source().values<float>().data();
  const float* source_end = source_begin + Source().num_elements();
  int64_t bytes = 0;
  int64_t views =
      0;  // per-replica batches that alias the source (no copy made)
  int64_t batches = 0;
  for (auto _ : state) {
    absl::StatusOr<DistributedIterator> it = dist->MakeIterator();
    TPUSIM_CHECK(it.ok()) << it.status();
    while (true) {
      absl::StatusOr<strategy::PerReplica<Element>> step = it->GetNext();
      if (!step.ok()) break;
      for (const Element& e : step->values()) {
        const Tensor& t = e.leaf();
        bytes += t.byte_size();
        const float* data = t.values<float>().data();
        benchmark::DoNotOptimize(data);
        views += (data >= source_begin && data < source_end) ? 1 : 0;
        ++batches;
      }
    }
  }
  TPUSIM_CHECK(bytes == kBytesPerPass * state.iterations()) << bytes;
  state.SetBytesProcessed(bytes);
  state.counters["zero_copy_fraction"] =
      batches == 0 ? 0.0
                   : static_cast<double>(views) / static_cast<double>(batches);
}
// Rows in source order: the rebatched batch(128) of consecutive slices is a
// zero-copy view (DATA-CORE's StackViews), so this measures the per-element
// cost of the pipeline, not a copy.
void BM_DistributeRebatch1GiB(benchmark::State& state) {
  RunDistribute(state,
                Dataset::FromTensorSlices(TensorRefNest(TensorRef(Source())))
                    .Repeat(kRepeats)
                    .Batch(kGlobalBatch));
}
BENCHMARK(BM_DistributeRebatch1GiB)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Rows of two interleaved passes over the source (r0, r0, r1, r1, ...):
// consecutive rows are never adjacent in memory, so every per-replica batch is
// a real copy of 128 KiB, as TF's batch kernel makes. This is the figure to
// compare with memcpy.
void BM_DistributeRebatchCopy1GiB(benchmark::State& state) {
  Dataset rows = Dataset::Range(2).Interleave(
      [](const FunctionArg&) {
        return Dataset::FromTensorSlices(TensorRefNest(TensorRef(Source())));
      },
      /*cycle_length=*/2, /*block_length=*/1);
  RunDistribute(state, rows.Repeat(kRepeats / 2).Batch(kGlobalBatch));
}
BENCHMARK(BM_DistributeRebatchCopy1GiB)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same pipeline with the rewrite done by hand (batch(128)) and no
// distribution: what the dataset nodes cost by themselves, so the distribution
// layer's share can be read off.
void BM_BatchOnly1GiB(benchmark::State& state) {
  Dataset ds = Dataset::FromTensorSlices(TensorRefNest(TensorRef(Source())))
                   .Repeat(kRepeats)
                   .Batch(kGlobalBatch / 8);
  int64_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<IteratorPtr> it = ds.MakeIterator();
    TPUSIM_CHECK(it.ok()) << it.status();
    while (true) {
      absl::StatusOr<std::optional<Element>> e = (*it)->GetNext();
      if (!e.ok() || !e->has_value()) break;
      const Tensor& t = (*e)->leaf();
      bytes += t.byte_size();
      benchmark::DoNotOptimize(t.values<float>().data());
    }
  }
  TPUSIM_CHECK(bytes == kBytesPerPass * state.iterations()) << bytes;
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_BatchOnly1GiB)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Memcpy1GiB(benchmark::State& state) {
  const Tensor& source = Source();
  const uint8_t* src = source.raw_bytes().data();
  const size_t source_bytes = source.raw_bytes().size();
  std::vector<uint8_t> dst(source_bytes);
  for (auto _ : state) {
    for (int64_t r = 0; r < kRepeats; ++r) {
      std::memcpy(dst.data(), src, source_bytes);
      benchmark::ClobberMemory();
    }
  }
  state.SetBytesProcessed(kBytesPerPass * state.iterations());
}
BENCHMARK(BM_Memcpy1GiB)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tpusim::data
